package plan

import (
	"fmt"
	"slices"
	"strings"
)

// RecordChange is one set of DNS records apply publishes, changes or retires for a node
// (SPEC §7): a published name's address records, or the zone's mail records on the relay;
// or a conflict, records at a published name that slipway does not own.
type RecordChange struct {
	Name   string `json:"name"`
	Kind   string `json:"kind"`   // address, mx, spf, dmarc
	Action Action `json:"action"` // create, update, delete, conflict
	// Old are the records the server holds ("A 192.0.2.1"), New those apply publishes.
	Old []string `json:"old,omitempty"`
	New []string `json:"new,omitempty"`
	// Unknown: the node's address is known after apply (its load balancer gives it one).
	Unknown bool   `json:"unknown,omitempty"`
	Reason  string `json:"reason,omitempty"` // a conflict: what holds the name
	// Adopted is the owner of an earlier release's key that the records carry (issue 46), and
	// Owner the deployment's, which apply writes in its place (an update).
	Adopted string `json:"adopted,omitempty"`
	Owner   string `json:"owner,omitempty"`
}

// KnownAfterApply is how a plan shows an address it does not know yet.
const KnownAfterApply = "(known after apply)"

func (r RecordChange) String() string {
	what := "dns " + r.Name
	if r.Kind != "address" {
		what += " (" + r.Kind + ")"
	}
	switch {
	case r.Action == Conflict:
		return what + ": " + r.Reason
	case r.Adopted != "" && slices.Equal(r.Old, r.New):
		return fmt.Sprintf("%s: %s kept, adopted: owner %s -> %s", what, strings.Join(r.Old, ", "), r.Adopted, r.Owner)
	case r.Adopted != "":
		return fmt.Sprintf("%s: %s -> %s, adopted: owner %s -> %s", what, strings.Join(r.Old, ", "), strings.Join(r.New, ", "), r.Adopted, r.Owner)
	case r.Action == Delete:
		return what + ": " + strings.Join(r.Old, ", ")
	case r.Unknown:
		return what + ": " + KnownAfterApply
	case r.Action == Update && len(r.Old) > 0:
		return fmt.Sprintf("%s: %s -> %s", what, strings.Join(r.Old, ", "), strings.Join(r.New, ", "))
	}
	return what + ": " + strings.Join(r.New, ", ")
}

// recordsWhere are the node's record changes that keep says.
func recordsWhere(rs []RecordChange, keep func(RecordChange) bool) []RecordChange {
	var out []RecordChange
	for _, r := range rs {
		if keep(r) {
			out = append(out, r)
		}
	}
	return out
}

// recordConflicts is why a node is refused before its rollout: the names it would publish
// that records slipway does not own hold.
func recordConflicts(np *NodePlan) []string {
	var why []string
	for _, r := range np.Records {
		if r.Action == Conflict {
			why = append(why, r.Reason)
		}
	}
	return why
}

// DNSPublish is the publish lane's payload of a publish-dns step: the record sets it
// publishes, as planned (SPEC §7). Its member is the step's "records" in JSON.
type DNSPublish struct {
	Records []RecordChange `json:"records,omitempty"`
}

// StepText is how plan prints a publish-dns step.
func (d DNSPublish) StepText() string {
	return "publish dns " + recordNames(d.Records) + " (one UPDATE each, after the address is known)"
}

// DNSRetire is the publish lane's payload of a retire-dns step: the record sets it retires,
// as planned. Its member is the step's "records" in JSON.
type DNSRetire struct {
	Records []RecordChange `json:"records,omitempty"`
}

// StepText is how plan prints a retire-dns step.
func (d DNSRetire) StepText() string { return "retire dns " + recordNames(d.Records) }

// recordNames lists record sets by name, a mail set with its kind.
func recordNames(rs []RecordChange) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = r.Name
		if r.Kind != "address" {
			parts[i] += " (" + r.Kind + ")"
		}
	}
	return strings.Join(parts, ", ")
}

var (
	_ StepPayload = DNSPublish{}
	_ StepPayload = DNSRetire{}
)
