package spire

import (
	"context"
	"fmt"
	"net"
	"os"
	"path"
	"slices"
	"strings"

	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

// The SPIRE lane's parts outlive the file's `spire:` (issue 43 item 9): the state records
// where the lane made them (a state.SpireRecord: the server, the spire node, the namespace),
// before it makes any, and keeps the record until they are retired. A record the file no
// longer names (`spire:` removed, another server, or `apply --move-namespace`) is retired:
// plan shows what goes, apply removes it (then forgets the record), destroy removes it too.

// placeOf is where the lane of t makes its parts.
func placeOf(t lane.Target) state.SpireRecord {
	s := t.Group.Spire
	return state.SpireRecord{Namespace: t.Namespace, Server: s.Server, TrustDomain: s.TrustDomain, SSH: s.SSH.String(),
		HostKey: s.HostKey, ConfigDir: s.ConfigDir, PIDFile: s.PIDFile}
}

// retiredPlaces are doc's records that t's lane does not keep: every one when the file has no
// `spire:`, else those of another place.
func retiredPlaces(doc *state.Document, t lane.Target) []state.SpireRecord {
	if doc == nil {
		return nil
	}
	keep := ""
	if t.Group.Spire != nil {
		keep = placeOf(t).Place()
	}
	var out []state.SpireRecord
	for _, r := range doc.Spire {
		if r.Place() != keep {
			out = append(out, r)
		}
	}
	return out
}

// specOfRecord reads rec back as the `spire:` its parts were made with. A state is a file its
// holders may edit: its values are checked as the group file's are before any reaches the
// spire node's shell or a connection.
func specOfRecord(rec state.SpireRecord) (*spec.Spire, error) {
	ssh, ok := spec.ParseSSHTarget(rec.SSH)
	if !ok {
		return nil, fmt.Errorf("ssh %q is not user@host:port", rec.SSH)
	}
	if _, port, err := net.SplitHostPort(rec.Server); err != nil || port == "" {
		return nil, fmt.Errorf("server %q is not host:port", rec.Server)
	}
	if !spec.IsDNSLabel(rec.Namespace) || !spec.IsSubdomain(rec.TrustDomain) {
		return nil, fmt.Errorf("namespace %q or trust domain %q is not a DNS name", rec.Namespace, rec.TrustDomain)
	}
	for _, p := range []string{rec.ConfigDir, rec.PIDFile} {
		if !path.IsAbs(p) || path.Clean(p) != p || p == "/" || strings.ContainsAny(p, "'\"\\$`\n") {
			return nil, fmt.Errorf("path %q is not a clean absolute path", p)
		}
	}
	return &spec.Spire{Server: rec.Server, TrustDomain: rec.TrustDomain, SSH: ssh, HostKey: rec.HostKey,
		ConfigDir: rec.ConfigDir, PIDFile: rec.PIDFile}, nil
}

// retirement is one record's parts to retire: the lane that made them (no nodes) and what
// goes.
type retirement struct {
	rec     state.SpireRecord
	lane    *Lane
	changes []plan.SpireChange
	close   func()
}

// planRetirements opens the lane of every record of recs and plans the removal of what it made
// for t's deployment. The rights are named by the deployment alone: they go with the first
// record that lists them, and stay when keepRights (the file's lane keeps and binds them).
// done closes the lanes.
func (h *Hooks) planRetirements(ctx context.Context, t lane.Target, recs []state.SpireRecord, keepRights bool) (rs []retirement, done func(), err error) {
	done = func() {
		for _, r := range rs {
			r.close()
		}
	}
	rights := keepRights
	for _, rec := range recs {
		r, err := h.planRetirement(ctx, t, rec)
		if err != nil {
			done()
			return nil, func() {}, err
		}
		rs = append(rs, r)
		last := &rs[len(rs)-1]
		if rights {
			last.changes = slices.DeleteFunc(last.changes, isRights)
		}
		rights = rights || slices.ContainsFunc(last.changes, isRights)
	}
	return rs, done, nil
}

// isRights: c is of the token-review rights (ClusterRole, binding).
func isRights(c plan.SpireChange) bool {
	return c.What == plan.SpireClusterRole || c.What == plan.SpireRoleBinding
}

// planRetirement opens rec's lane for t's deployment and plans what goes of it.
func (h *Hooks) planRetirement(ctx context.Context, t lane.Target, rec state.SpireRecord) (retirement, error) {
	where := fmt.Sprintf("group %s: spire (recorded in the state: server %s, spire node %s, namespace %s)", t.Group.Name, rec.Server, rec.SSH, rec.Namespace)
	s, err := specOfRecord(rec)
	if err != nil {
		return retirement{}, fmt.Errorf("%s: %w", where, err)
	}
	kc, ok := h.cluster()
	if !ok {
		return retirement{}, fmt.Errorf("%s: the cluster client cannot do what the SPIRE lane needs", where)
	}
	c, err := h.connect(ctx, s)
	if err != nil {
		return retirement{}, fmt.Errorf("%s: %w", where, err)
	}
	sl := &Lane{Spire: s, Group: t.Group.Name, Namespace: rec.Namespace, Server: c.Server, Node: c.Node, Kube: kc,
		APIServer: os.Getenv(spec.EnvSpireAPIServer)}
	cs, err := sl.PlanDestroy(ctx)
	if err != nil {
		c.Close()
		return retirement{}, fmt.Errorf("%s: %w", where, err)
	}
	for i := range cs {
		cs[i].Reason = strings.TrimPrefix(cs[i].Reason+"; ", "; ") + retireReason(t, rec)
	}
	return retirement{rec: rec, lane: sl, changes: cs, close: c.Close}, nil
}

// retireReason says why a record's parts go.
func retireReason(t lane.Target, rec state.SpireRecord) string {
	switch {
	case t.Group.Spire == nil:
		return "the file has no spire: any more"
	case rec.Namespace != t.Namespace:
		return "the deployment moved from namespace " + rec.Namespace
	}
	return "the file names another SPIRE server or spire node"
}

// retiredChanges are the changes of rs, in order.
func retiredChanges(rs []retirement) []plan.SpireChange {
	var out []plan.SpireChange
	for _, r := range rs {
		out = append(out, r.changes...)
	}
	return out
}

// retire removes what each of rs planned (planned again now, never read from a plan file),
// and forgets each record once its parts are gone: a run killed before finds them again.
func (h *Hooks) retire(ctx context.Context, t lane.Target, rs []retirement, rec lane.Recorder) error {
	for _, r := range rs {
		if err := r.lane.Apply(ctx, r.changes); err != nil {
			return fmt.Errorf("group %s: spire (recorded in the state: server %s, namespace %s): %w", t.Group.Name, r.rec.Server, r.rec.Namespace, err)
		}
		if rec == nil {
			continue
		}
		place := r.rec.Place()
		err := rec.Update(ctx, "after the SPIRE parts in namespace "+r.rec.Namespace+" were retired", func(d *state.Document) {
			d.Spire = slices.DeleteFunc(d.Spire, func(x state.SpireRecord) bool { return x.Place() == place })
		})
		if err != nil {
			return err
		}
	}
	return nil
}
