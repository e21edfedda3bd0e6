package spire

import (
	"slices"
	"strings"

	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
)

// HostSelector is the workload selector of a node's host entry: root's services on the node.
const HostSelector = "unix:uid:0"

// IDs and SPIFFE IDs of a node's entries (the reference's names, FR-016 key entities).

// AliasID is the node alias's SPIFFE ID.
func AliasID(td, cluster, ns, node string) string {
	return "spiffe://" + td + "/k8s/" + cluster + "/" + ns + "/" + spec.ServiceAccountName(node)
}

// HostID is the SPIFFE ID of the node's host entry: the identity its agent hands out.
func HostID(td, cluster, node string) string {
	return "spiffe://" + td + "/host/" + cluster + "-" + node
}

// entryIDPrefix starts every entry ID slipway makes.
const entryIDPrefix = "slipway."

// EntryIDs are the fixed IDs of a node's alias and host entries.
func EntryIDs(cluster, node string) (alias, host string) {
	return entryIDPrefix + cluster + ".alias." + node, entryIDPrefix + cluster + ".host." + node
}

// wantEntries are the entries of the group's nodes, an alias before its host entry.
func wantEntries(td, cluster, ns string, nodes []string) []plan.SpireEntryDef {
	var out []plan.SpireEntryDef
	for _, n := range nodes {
		aliasID, hostID := EntryIDs(cluster, n)
		alias := AliasID(td, cluster, ns, n)
		out = append(out,
			plan.SpireEntryDef{ID: aliasID, SPIFFEID: alias, ParentID: "spiffe://" + td + "/spire/server",
				Selectors: []string{"k8s_psat:agent_ns:" + ns, "k8s_psat:agent_sa:" + spec.ServiceAccountName(n), "k8s_psat:cluster:" + cluster}},
			plan.SpireEntryDef{ID: hostID, SPIFFEID: HostID(td, cluster, n), ParentID: alias, Selectors: []string{HostSelector}})
	}
	return out
}

// ours are the live entries slipway made for cluster: their IDs start slipway.<cluster>.
// (an entry ID may hold '.', a cluster's name may not).
func ours(cluster string, live []plan.SpireEntryDef) []plan.SpireEntryDef {
	var out []plan.SpireEntryDef
	for _, e := range live {
		if strings.HasPrefix(e.ID, entryIDPrefix+cluster+".") {
			out = append(out, e)
		}
	}
	return out
}

// entryChanges make live (the cluster's entries) into want: creates and updates in want's
// order, then deletes (host entries before their aliases).
func entryChanges(cluster string, want, live []plan.SpireEntryDef) []plan.SpireChange {
	byID := map[string]plan.SpireEntryDef{}
	for _, e := range live {
		byID[e.ID] = e
	}
	var out []plan.SpireChange
	wanted := map[string]bool{}
	for _, w := range want {
		wanted[w.ID] = true
		e := w
		c := plan.SpireChange{Node: nodeOf(cluster, w.ID), What: plan.SpireEntry, Name: w.SPIFFEID, Cluster: cluster, Entry: &e}
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
		gone = append(gone, plan.SpireChange{Node: nodeOf(cluster, l.ID), What: plan.SpireEntry, Name: l.SPIFFEID, Action: plan.Delete, Cluster: cluster, Entry: &e})
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

// nodeOf is the node of an entry ID slipway made for cluster.
func nodeOf(cluster, id string) string {
	rest := strings.TrimPrefix(id, entryIDPrefix+cluster+".")
	for _, k := range []string{"alias.", "host."} {
		if n, ok := strings.CutPrefix(rest, k); ok {
			return n
		}
	}
	return ""
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
