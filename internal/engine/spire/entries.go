package spire

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
)

// HostSelector is the workload selector of a node's host entry: root's services on the node.
const HostSelector = "unix:uid:0"

// IDs and SPIFFE IDs of a node's entries (the reference's names, FR-016 key entities). Every
// part is a path segment of its own: no two (cluster, node) pairs make one ID, whatever '-'
// their names hold (issue 46: namespace shop with node web-db and namespace shop-web with
// node db made one host ID when the parts were joined with '-').

// AliasID is the node alias's SPIFFE ID.
func AliasID(td, cluster, ns, node string) string {
	return "spiffe://" + td + "/k8s/" + cluster + "/" + ns + "/" + spec.ServiceAccountName(node)
}

// HostID is the SPIFFE ID of the node's host entry: the identity its agent hands out.
func HostID(td, cluster, node string) string {
	return "spiffe://" + td + "/host/" + cluster + "/" + node
}

// entryIDPrefix starts every entry ID slipway makes.
const entryIDPrefix = "slipway."

// EntryIDs are the fixed IDs of a node's alias and host entries in deployment (its identity,
// spec.Group.Name): slipway.<cluster>.<deployment>.alias.<node>. A node's name holds no
// '.', so the ID is read from its end (kind, node) and the deployment is what lies between.
func EntryIDs(cluster, deployment, node string) (alias, host string) {
	p := entryIDPrefix + cluster + "." + deployment + "."
	return p + "alias." + node, p + "host." + node
}

// PodSelector is the alias's selector of the node's current pods: the agent pod label
// LabelSpirePod with the digest of the node's pod template (k8s_psat reports it because
// k8s_psat.hcl allows the key).
func PodSelector(value string) string {
	return "k8s_psat:agent_pod_label:" + spec.LabelSpirePod + ":" + value
}

// podLabelValue is what render writes in LabelSpirePod: 16 hex digits.
var podLabelValue = regexp.MustCompile(`^[0-9a-f]{16}$`)

// wantEntries are the entries of the deployment's nodes, an alias before its host entry.
// pods holds each node's LabelSpirePod value: the alias selects only pods of the node's
// current template, so the agent of a pod that came before (on this kube node, or one whose
// agent ID a pod of another node took over) matches it no more.
func wantEntries(td, cluster, deployment, ns string, nodes []string, pods map[string]string) []plan.SpireEntryDef {
	var out []plan.SpireEntryDef
	for _, n := range nodes {
		aliasID, hostID := EntryIDs(cluster, deployment, n)
		alias := AliasID(td, cluster, ns, n)
		out = append(out,
			plan.SpireEntryDef{ID: aliasID, SPIFFEID: alias, ParentID: "spiffe://" + td + "/spire/server",
				Selectors: []string{"k8s_psat:agent_ns:" + ns, "k8s_psat:agent_sa:" + spec.ServiceAccountName(n), "k8s_psat:cluster:" + cluster, PodSelector(pods[n])}},
			plan.SpireEntryDef{ID: hostID, SPIFFEID: HostID(td, cluster, n), ParentID: alias, Selectors: []string{HostSelector}})
	}
	return out
}

// entryNode is the node of an entry ID deployment's lane made for cluster, "" when the ID is
// not one: slipway.<cluster>.<deployment>.(alias|host).<node>, the node one DNS label.
func entryNode(cluster, deployment, id string) string {
	if deployment == "" {
		return ""
	}
	return legacyNode(cluster+"."+deployment, id)
}

// legacyNode is the node of a legacy entry ID of cluster (slipway.<cluster>.alias.<node>).
func legacyNode(cluster, id string) string {
	rest, ok := strings.CutPrefix(id, entryIDPrefix+cluster+".")
	if !ok {
		return ""
	}
	for _, k := range []string{"alias.", "host."} {
		if n, ok := strings.CutPrefix(rest, k); ok && n != "" && !strings.Contains(n, ".") {
			return n
		}
	}
	return ""
}

// ours are the live entries deployment's lane made for cluster.
func ours(cluster, deployment string, live []plan.SpireEntryDef) []plan.SpireEntryDef {
	var out []plan.SpireEntryDef
	for _, e := range live {
		if entryNode(cluster, deployment, e.ID) != "" {
			out = append(out, e)
		}
	}
	return out
}

// legacyOf are the live entries the release before per-deployment keys made for the nodes
// of cluster (the namespace's): apply takes them over, by deleting them once its own exist.
func legacyOf(cluster string, nodes []string, live []plan.SpireEntryDef) []plan.SpireEntryDef {
	var out []plan.SpireEntryDef
	for _, e := range live {
		if n := legacyNode(cluster, e.ID); n != "" && slices.Contains(nodes, n) {
			out = append(out, e)
		}
	}
	return out
}

// EntryConflictError is an entry slipway would make whose SPIFFE ID the server already
// gives, in an entry that is not this deployment's, to other selectors or another parent:
// making it would hand one identity to two workloads.
type EntryConflictError struct {
	Want, Live plan.SpireEntryDef
}

func (e *EntryConflictError) Error() string {
	return fmt.Sprintf("spire: entry %s would have SPIFFE ID %s, which entry %s on the server already has with %s: one identity for two workloads; remove that entry or rename the node",
		e.Want.ID, e.Want.SPIFFEID, e.Live.ID, describeEntry(e.Live))
}

func describeEntry(e plan.SpireEntryDef) string {
	return "parent " + e.ParentID + " and selectors " + strings.Join(slices.Sorted(slices.Values(e.Selectors)), ", ")
}

// conflicts refuses a wanted entry whose SPIFFE ID another live entry (one not of mine)
// holds with other selectors or another parent.
func conflicts(want []plan.SpireEntryDef, live []plan.SpireEntryDef, mine func(id string) bool) error {
	bySPIFFE := map[string][]plan.SpireEntryDef{}
	for _, l := range live {
		if !mine(l.ID) {
			bySPIFFE[l.SPIFFEID] = append(bySPIFFE[l.SPIFFEID], l)
		}
	}
	for _, w := range want {
		for _, l := range bySPIFFE[w.SPIFFEID] {
			if l.ParentID != w.ParentID || !slices.Equal(slices.Sorted(slices.Values(l.Selectors)), slices.Sorted(slices.Values(w.Selectors))) {
				return &EntryConflictError{Want: w, Live: l}
			}
		}
	}
	return nil
}

// entryChanges make live (the deployment's entries, and the legacy ones it takes over) into
// want: creates and updates in want's order, then deletes (host entries before their
// aliases). node names the node of an entry ID.
func entryChanges(cluster string, want, live []plan.SpireEntryDef, node func(id string) string) []plan.SpireChange {
	byID := map[string]plan.SpireEntryDef{}
	for _, e := range live {
		byID[e.ID] = e
	}
	var out []plan.SpireChange
	wanted := map[string]bool{}
	for _, w := range want {
		wanted[w.ID] = true
		e := w
		c := plan.SpireChange{Node: node(w.ID), What: plan.SpireEntry, Name: w.SPIFFEID, Cluster: cluster, Entry: &e}
		l, ok := byID[w.ID]
		switch {
		case !ok:
			c.Action = plan.Create
		case !sameEntry(l, w):
			c.Action, c.Reason = plan.Update, entryDiff(l, w)
		default:
			continue
		}
		out = append(out, c)
	}
	var gone []plan.SpireChange
	for _, l := range live {
		if wanted[l.ID] {
			continue
		}
		e := plan.SpireEntryDef{ID: l.ID}
		gone = append(gone, plan.SpireChange{Node: node(l.ID), What: plan.SpireEntry, Name: l.SPIFFEID, Action: plan.Delete, Cluster: cluster, Entry: &e})
	}
	// Host entries first: an alias goes after what hangs below it.
	slices.SortStableFunc(gone, func(a, b plan.SpireChange) int {
		return strings.Compare(kindOrder(a.Entry.ID), kindOrder(b.Entry.ID))
	})
	return append(out, gone...)
}

func kindOrder(id string) string {
	if strings.Contains(id, ".host.") {
		return "0"
	}
	return "1"
}

func sameEntry(a, b plan.SpireEntryDef) bool { return entryDiff(a, b) == "" }

// entryDiff says what of live differs from want.
func entryDiff(live, want plan.SpireEntryDef) string {
	var d []string
	if live.SPIFFEID != want.SPIFFEID {
		d = append(d, "spiffe ID "+live.SPIFFEID+" -> "+want.SPIFFEID)
	}
	if live.ParentID != want.ParentID {
		d = append(d, "parent "+live.ParentID+" -> "+want.ParentID)
	}
	ls, ws := slices.Sorted(slices.Values(live.Selectors)), slices.Sorted(slices.Values(want.Selectors))
	if !slices.Equal(ls, ws) {
		d = append(d, "selectors "+strings.Join(ls, ", ")+" -> "+strings.Join(ws, ", "))
	}
	return strings.Join(d, "; ")
}
