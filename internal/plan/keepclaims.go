package plan

// KeepClaims is apply --keep-claims: the claims of the nodes p removes (that left the group
// file, or moved to another target when their app changed) are not deleted, as destroy
// --keep-claims keeps every claim. Each such claim's delete leaves the node's changes for its
// KeptClaims; the node's other objects still go. Run before Protect: a kept claim is not
// deleted, so a protected one no longer refuses the plan.
func KeepClaims(p *Plan) {
	for i := range p.Nodes {
		np := &p.Nodes[i]
		if !np.Removed {
			continue
		}
		var changes []Change
		for _, c := range np.Changes {
			if c.Key.Kind == "PersistentVolumeClaim" && c.Action == Delete {
				np.KeptClaims = append(np.KeptClaims, c.Key)
				continue
			}
			changes = append(changes, c)
		}
		np.Changes = changes
	}
}

// Kept reports whether p keeps a claim of node (KeepClaims).
func (p *Plan) Kept(node string) bool {
	np := p.Node(node)
	return np != nil && len(np.KeptClaims) > 0
}
