package spire

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
)

// SavedPlanError is a saved plan whose SPIRE changes are not what the group file, the
// cluster and the server give now: apply runs none of them.
type SavedPlanError struct{ Detail string }

func (e *SavedPlanError) Error() string {
	return "saved plan: its SPIRE changes are not what the group file and the server give now (" + e.Detail + "): plan again"
}

// ApplySaved makes what a saved plan's spire step says, but never from the saved file: it
// plans again from the validated group file, refuses when the saved changes differ, and
// applies the ones it planned itself. A plan file is data anyone may edit; no name in it
// reaches the spire node's shell, the registration API or the cluster.
func (l *Lane) ApplySaved(ctx context.Context, saved []plan.SpireChange) error {
	p, err := l.Plan(ctx)
	if err != nil {
		return err
	}
	if d := changesDiff(saved, p.Changes); d != "" {
		return &SavedPlanError{Detail: d}
	}
	return l.Apply(ctx, p.Changes)
}

// changesDiff says the first difference between two lists of changes, "" when they do the
// same (the reasons aside: a token's age moves with the clock).
func changesDiff(saved, now []plan.SpireChange) string {
	key := func(c plan.SpireChange) string {
		k := string(c.Action) + " " + string(c.What) + " " + c.Name + " node=" + c.Node + " cluster=" + c.Cluster
		if c.Entry != nil {
			k += " id=" + c.Entry.ID + " spiffe=" + c.Entry.SPIFFEID + " parent=" + c.Entry.ParentID +
				" selectors=" + strings.Join(slices.Sorted(slices.Values(c.Entry.Selectors)), ",")
		}
		return k
	}
	a, b := make([]string, len(saved)), make([]string, len(now))
	for i, c := range saved {
		a[i] = key(c)
	}
	for i, c := range now {
		b[i] = key(c)
	}
	slices.Sort(a)
	slices.Sort(b)
	for _, k := range a {
		if !slices.Contains(b, k) {
			return "the plan file says " + quoteControl(k) + ", which a plan now does not"
		}
	}
	for _, k := range b {
		if !slices.Contains(a, k) {
			return "a plan now says " + k + ", which the plan file does not"
		}
	}
	return ""
}

// quoteControl quotes what a plan file may hold that a screen would run.
func quoteControl(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			fmt.Fprintf(&b, "\\x%02x", r)
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Apply makes the changes the lane planned, in the order a node's agent needs them: the
// token-review account's rights, then its kubeconfig and the allow list on the spire node
// (one SSH session, one reconfiguration of the server), then the entries and the agents; on
// destroy the rights go last. Every entry is checked to be the deployment's own (its ID,
// its SPIFFE ID in the trust domain), so nothing else is made or deleted. When a part fails,
// what this call created is taken back (rollback): no rights, file or entry outlives a sync
// that did not finish.
func (l *Lane) Apply(ctx context.Context, cs []plan.SpireChange) error {
	if len(cs) == 0 {
		return nil
	}
	cluster := cs[0].Cluster
	w, err := l.sortChanges(cluster, cs)
	if err != nil {
		return err
	}
	undo := undoOf(cs)
	failed := func(err error) error {
		if rerr := l.rollback(ctx, cluster, undo); rerr != nil {
			return errors.Join(err, rerr)
		}
		return err
	}
	if w.rbac {
		if err := l.Kube.ApplySpireRBAC(ctx, l.Namespace, l.Group); err != nil {
			return failed(fmt.Errorf("spire: %w", err))
		}
	}
	if w.remote {
		if err := l.applyRemote(ctx, cluster, cs, w.kubeconfig); err != nil {
			return failed(err)
		}
	}
	var errs []error
	if len(w.deletes) > 0 {
		errs = append(errs, l.Server.DeleteEntries(ctx, w.deletes))
	}
	if len(w.creates) > 0 {
		errs = append(errs, l.Server.CreateEntries(ctx, w.creates))
	}
	if len(w.updates) > 0 {
		errs = append(errs, l.Server.UpdateEntries(ctx, w.updates))
	}
	if err := errors.Join(errs...); err != nil {
		return failed(fmt.Errorf("spire server %s: entries: %w", l.Spire.Server, err))
	}
	// Last on the server: by now the allow list and the entries are gone, so an agent still
	// running cannot attest again, nor get an SVID.
	if len(w.agents) > 0 {
		if err := l.Server.EvictAgents(ctx, w.agents); err != nil {
			return fmt.Errorf("spire server %s: agents: %w", l.Spire.Server, err)
		}
	}
	if w.rbacGone {
		if err := l.Kube.DeleteSpireRBAC(ctx, l.Group); err != nil {
			return fmt.Errorf("spire: %w", err)
		}
	}
	return nil
}

// spireWork is what Apply does, sorted out of the changes by the part that makes it: Apply
// runs each part once, in its own order, whatever order the plan listed the changes in.
type spireWork struct {
	rbac, rbacGone, remote bool
	kubeconfig             *plan.SpireChange
	creates, updates       []plan.SpireEntryDef
	deletes, agents        []string
}

// sortChanges sorts cs into the parts of a sync, refusing (before anything is made) a change
// for another cluster, an agent outside the cluster's path or an entry not the deployment's.
func (l *Lane) sortChanges(cluster string, cs []plan.SpireChange) (spireWork, error) {
	var w spireWork
	for i, c := range cs {
		if c.Cluster != cluster {
			return spireWork{}, fmt.Errorf("spire: change %s is for cluster %s, not %s", c, c.Cluster, cluster)
		}
		switch c.What {
		case plan.SpireClusterRole, plan.SpireRoleBinding:
			if c.Action == plan.Delete {
				w.rbacGone = true
			} else {
				w.rbac = true
			}
		case plan.SpireKubeconfig:
			if c.Action != plan.Delete {
				w.kubeconfig = &cs[i]
			}
			w.remote = true
		case plan.SpireAllow:
			w.remote = true
		case plan.SpireAgent:
			if !strings.HasPrefix(c.Name, "spiffe://"+l.Spire.TrustDomain+AgentPath(cluster)) {
				return spireWork{}, fmt.Errorf("spire: agent %s is not one of cluster %s", c.Name, cluster)
			}
			w.agents = append(w.agents, c.Name)
		case plan.SpireEntry:
			if err := l.checkEntry(cluster, c); err != nil {
				return spireWork{}, err
			}
			switch c.Action {
			case plan.Create:
				w.creates = append(w.creates, *c.Entry)
			case plan.Update:
				w.updates = append(w.updates, *c.Entry)
			case plan.Delete:
				w.deletes = append(w.deletes, c.Entry.ID)
			}
		}
	}
	return w, nil
}

// undoOf are the changes that take back what cs create: the entries, the allow files, the
// kubeconfig and the rights that did not exist before (what cs update or delete is left as
// the failed sync left it; the next plan says what remains).
func undoOf(cs []plan.SpireChange) []plan.SpireChange {
	var out []plan.SpireChange
	for _, c := range cs {
		if c.Action != plan.Create {
			continue
		}
		u := c
		u.Action, u.Reason = plan.Delete, "taken back: the sync failed"
		if c.Entry != nil {
			u.Entry = &plan.SpireEntryDef{ID: c.Entry.ID}
		}
		out = append(out, u)
	}
	return out
}

// rollbackTimeout bounds the rollback of a failed sync, which runs even when the run was
// interrupted (its context cancelled).
const rollbackTimeout = 30 * time.Second

// rollback takes back undo (undoOf): the entries first, then the files on the spire node,
// then the rights, each tried whatever the one before did; it says what it could not take
// back (the next plan shows it again).
func (l *Lane) rollback(ctx context.Context, cluster string, undo []plan.SpireChange) error {
	if len(undo) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
	defer cancel()
	var ids []string
	var files []plan.SpireChange
	rights := false
	for _, c := range undo {
		switch c.What {
		case plan.SpireEntry:
			ids = append(ids, c.Entry.ID)
		case plan.SpireAllow, plan.SpireKubeconfig:
			files = append(files, c)
		case plan.SpireClusterRole, plan.SpireRoleBinding:
			rights = true
		}
	}
	var errs []error
	if len(ids) > 0 {
		if err := l.Server.DeleteEntries(ctx, ids); err != nil {
			errs = append(errs, fmt.Errorf("entries: %w", err))
		}
	}
	if len(files) > 0 {
		if err := l.applyRemote(ctx, cluster, files, nil); err != nil {
			errs = append(errs, err)
		}
	}
	if rights {
		if err := l.Kube.DeleteSpireRBAC(ctx, l.Group); err != nil {
			errs = append(errs, fmt.Errorf("rights: %w", err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("spire: taking back what the failed sync made (the next plan shows what is left): %w", err)
	}
	return nil
}

// checkEntry: an entry change the lane makes is one of the deployment's (or a legacy one of
// its nodes, deleted), with SPIFFE IDs in the trust domain under the cluster's paths.
func (l *Lane) checkEntry(cluster string, c plan.SpireChange) error {
	if c.Entry == nil {
		return fmt.Errorf("spire: entry change %s has no entry", c.Name)
	}
	e := *c.Entry
	if c.Action == plan.Delete {
		if entryNode(cluster, l.Group, e.ID) == "" && !slices.Contains(l.Nodes, legacyNode(cluster, e.ID)) {
			return fmt.Errorf("spire: entry %s is not one of deployment %s", e.ID, l.Group)
		}
		return nil
	}
	n := entryNode(cluster, l.Group, e.ID)
	if n == "" || !slices.Contains(l.Nodes, n) {
		return fmt.Errorf("spire: entry %s is not one of deployment %s's nodes", e.ID, l.Group)
	}
	td := l.Spire.TrustDomain
	alias, host := EntryIDs(cluster, l.Group, n)
	var want plan.SpireEntryDef
	for _, w := range wantEntries(td, cluster, l.Group, l.Namespace, []string{n}, l.PodLabels) {
		if w.ID == e.ID {
			want = w
		}
	}
	if (e.ID != alias && e.ID != host) || !sameEntry(e, want) {
		return fmt.Errorf("spire: entry %s is not what node %s's entry is (%s)", e.ID, n, entryDiff(e, want))
	}
	return nil
}

// applyRemote changes the spire node's files in one session; a kubeconfig created or
// updated gets a new token, which goes in the session's stdin and nowhere else.
func (l *Lane) applyRemote(ctx context.Context, cluster string, cs []plan.SpireChange, kc *plan.SpireChange) error {
	text := ""
	if kc != nil && kc.Action != plan.Delete {
		host, ca, err := l.apiServer()
		if err != nil {
			return err
		}
		tok, err := l.Kube.ServiceAccountToken(ctx, l.Namespace, spec.SpireServerAccount, TokenLife)
		if err != nil {
			return fmt.Errorf("spire: %w", err)
		}
		text = kubeconfigText(cluster, kubeconfigShape{server: host, ca: ca, namespace: l.Namespace},
			kubeconfigHeader(tok.AccountUID, tok.Issued, tok.Expires), tok.Token)
	}
	script, err := syncScript(l.Spire, cluster, l.Group, cs, text)
	if err != nil {
		return err
	}
	if _, err := l.Node.Run(ctx, script); err != nil {
		return fmt.Errorf("spire node %s: k8s_psat.d: %w", l.Spire.SSH, err)
	}
	return nil
}

// CheckSaved refuses a saved plan's SPIRE changes that are not the ones planned now (now):
// apply runs what it planned itself, and only when the plan file said the same.
func CheckSaved(saved, now []plan.SpireChange) error {
	if d := changesDiff(saved, now); d != "" {
		return &SavedPlanError{Detail: d}
	}
	return nil
}
