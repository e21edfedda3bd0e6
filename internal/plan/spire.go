package plan

import (
	"fmt"
	"slices"
	"strings"
)

// StepSpire makes the SPIRE server and its node what the group needs (FR-015 to FR-017),
// before any node's objects: the token-review account's rights, the kubeconfig and the
// allow list on the spire node, the registration entries. Its Payload (SpireChanges) holds
// the planned changes.
const StepSpire StepKind = "spire"

// SpireWhat is what a SpireChange changes.
type SpireWhat string

const (
	SpireEntry       SpireWhat = "entry"       // a registration entry on the server
	SpireAllow       SpireWhat = "allow-list"  // a service account on the k8s_psat allow list
	SpireKubeconfig  SpireWhat = "kubeconfig"  // the cluster's token-review kubeconfig
	SpireClusterRole SpireWhat = "clusterrole" // the rights of the token-review account
	SpireRoleBinding SpireWhat = "clusterrolebinding"
	// SpireAgent is an agent the server attested for the cluster (k8s_psat): destroy evicts
	// it, so that the server keeps nothing of the cluster.
	SpireAgent SpireWhat = "agent"
)

// SpireChange is one change of the SPIRE lane. Nothing here is secret: a kubeconfig change
// says why, never what it holds.
type SpireChange struct {
	Node   string    `json:"node,omitempty"` // "" for the cluster's own parts
	What   SpireWhat `json:"what"`
	Name   string    `json:"name"` // the entry's SPIFFE ID, <ns>:<sa>, the cluster, the object
	Action Action    `json:"action"`
	Reason string    `json:"reason,omitempty"`
	// Cluster is the cluster's name on the server (<kube-system UID>-<namespace>).
	Cluster string `json:"cluster"`
	// Entry is what an entry is created or updated as; for a delete, its ID.
	Entry *SpireEntryDef `json:"entry,omitempty"`
}

// SpireEntryDef is a registration entry as slipway makes it: a fixed ID, so a second apply
// finds it again and changes nothing.
type SpireEntryDef struct {
	ID        string   `json:"id"`
	SPIFFEID  string   `json:"spiffeID"`
	ParentID  string   `json:"parentID"`
	Selectors []string `json:"selectors"` // type:value
}

func (c SpireChange) String() string {
	s := fmt.Sprintf("spire %s %s", c.What, c.Name)
	if c.What == SpireEntry && c.Entry != nil && c.Action != Delete {
		s += fmt.Sprintf(" (parent %s; %s)", c.Entry.ParentID, strings.Join(c.Entry.Selectors, ", "))
	}
	if c.Reason != "" {
		s += ": " + c.Reason
	}
	return s
}

// spireSteps is the SPIRE lane's step, when it changes anything.
func spireSteps(p *Plan) []Step {
	if len(p.Spire) == 0 {
		return nil
	}
	return []Step{{Kind: StepSpire, Payload: SpireChanges(p.Spire)}}
}

// spireStepText is how plan prints a spire step.
func spireStepText(cs []SpireChange) string {
	n := map[SpireWhat]int{}
	for _, c := range cs {
		n[c.What]++
	}
	var parts []string
	for _, w := range []SpireWhat{SpireClusterRole, SpireRoleBinding, SpireKubeconfig, SpireAllow, SpireEntry, SpireAgent} {
		if n[w] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[w], w))
		}
	}
	if !slices.ContainsFunc(cs, func(c SpireChange) bool { return c.Action != Delete }) {
		return "retire SPIRE parts before any node (" + strings.Join(parts, ", ") + ")"
	}
	return "set up SPIRE before any node (" + strings.Join(parts, ", ") + "; the spire node's k8s_psat reconfigured once)"
}
