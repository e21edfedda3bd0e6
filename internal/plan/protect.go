package plan

import (
	"fmt"
	"strings"
)

// ProtectedClaim is the claim of a protected node that a plan would delete or replace.
type ProtectedClaim struct {
	Node   string
	Claim  Key
	Action Action // Delete or Replace
	// Removed: the node left the group file (the state still knows it is protected).
	Removed bool
	Reason  string // why a replace is needed
}

// ProtectedError refuses a plan that would delete the claim of a node whose `state.protect`
// is set (SPEC §6a), as OpenTofu's prevent_destroy refuses a plan: nothing is pushed or changed.
type ProtectedError struct {
	Claims  []ProtectedClaim
	Destroy bool // the plan of destroy (or plan -destroy)
}

func (e *ProtectedError) Error() string {
	lines := make([]string, len(e.Claims))
	for i, c := range e.Claims {
		head := fmt.Sprintf("node %s: claim %s is protected (state.protect)", c.Node, c.Claim.Namespace+"/"+c.Claim.Name)
		switch {
		case e.Destroy:
			lines[i] = head + ": destroy would delete it and the node's /var/lib with it; remove state.protect from node " + c.Node +
				" and apply first, or run `slipway destroy --keep-claims` to remove everything but the claims"
		case c.Removed:
			lines[i] = head + ": the node left the group file and apply would delete the claim and the node's /var/lib with it; put the node back," +
				" or to delete the claim put it back without state.protect, apply, then remove it; `slipway destroy --keep-claims` removes everything but the claims"
		default:
			lines[i] = head + ": apply would replace it (" + c.Reason + ") and lose the node's /var/lib; revert that change, or remove state.protect from node " +
				c.Node + " and apply first"
		}
	}
	return strings.Join(lines, "\n")
}

// Protect refuses p when it deletes or replaces the claim of a node in protected (the file's
// `state.protect` for a node in the file, the state's for one that left it): a
// *ProtectedError names each node and claim. It changes nothing in p.
func Protect(p *Plan, protected map[string]bool) error {
	var claims []ProtectedClaim
	for _, np := range p.Nodes {
		if !protected[np.Node] {
			continue
		}
		for _, c := range np.Changes {
			if c.Key.Kind != "PersistentVolumeClaim" || (c.Action != Delete && c.Action != Replace) {
				continue
			}
			claims = append(claims, ProtectedClaim{Node: np.Node, Claim: c.Key, Action: c.Action, Removed: np.Removed, Reason: c.Reason})
		}
	}
	if len(claims) == 0 {
		return nil
	}
	return &ProtectedError{Claims: claims, Destroy: p.Destroy}
}
