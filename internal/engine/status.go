package engine

import (
	"context"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
	"slipway.dev/slipway/internal/status"
)

// Status reads the state and the group's Deployments, ReplicaSets and pods and reports every
// node the group file, the state or the cluster knows. It changes nothing and takes no lock.
func (e *Engine) Status(ctx context.Context, t Target) (*status.Group, error) {
	if _, err := e.o.Kube.Ping(ctx); err != nil {
		return nil, err
	}
	// An earlier release's state that the next apply adopts is the deployment's: status
	// reports it, its objects (under the old key) and its DNS records as they will be.
	t, err := e.adopting(ctx, t)
	if err != nil {
		return nil, err
	}
	doc, err := readState(ctx, t)
	if err != nil {
		return nil, err
	}
	selector := lane.GroupSelector(t.Group.Name)
	if t.adopt != nil {
		selector = spec.LabelGroup + " in (" + t.Group.Name + "," + t.adopt.from + ")"
	}
	wl, err := e.o.Kube.ListWorkloads(ctx, t.Namespace, selector)
	if err != nil {
		return nil, err
	}
	gs := &status.Group{Group: t.Group.Name, Namespace: t.Namespace, Suspended: isSuspended(doc)}
	if t.adopt != nil {
		gs.AdoptsFrom = t.adopt.from
	}
	if doc != nil {
		gs.Applied, gs.StateSerial = true, doc.Serial
	}
	now := time.Now()
	deps := map[string]*appsv1.Deployment{}
	for _, d := range wl.Deployments {
		deps[d.Name] = d
	}
	judgeLive := func(d *appsv1.Deployment) status.Result { return judge(wl, d, now) }

	protected := lane.ProtectedNodes(t.Group, doc)
	for _, name := range statusNodes(t, doc, wl.Deployments) {
		gs.Nodes = append(gs.Nodes, e.nodeStatus(t, doc, name, deps[name], protected[name], wl.Deployments, judgeLive))
	}
	if err := e.reportLanes(ctx, t, doc, gs); err != nil {
		return nil, err
	}
	return gs, nil
}

// nodeStatus is one node's line of status: what the state recorded of it next to what its
// Deployment d (nil when none) runs, so that drift between the two shows.
func (e *Engine) nodeStatus(t Target, doc *state.Document, name string, d *appsv1.Deployment, protected bool, deps []*appsv1.Deployment, judgeLive func(*appsv1.Deployment) status.Result) status.Node {
	n := t.Group.Node(name)
	var st *state.NodeState
	if doc != nil {
		st = doc.Nodes[name]
	}
	ns := status.Node{Node: name, InFile: n != nil, InState: st != nil, Protected: protected}
	if st != nil {
		if st.Image.Digest != "" {
			ns.DesiredImage = st.Image.Ref + "@" + st.Image.Digest
			ns.Desired = st.Image.Digest
		}
		ns.LastRollout = st.LastRollout
		ns.Suspended = st.Suspended
		ns.StateVersion = st.StateVersion
		if c := st.Copy; c != nil {
			ns.Copy = &status.StateCopy{From: c.From, To: c.To, Removable: c.To == st.StateVersion}
		}
	}
	if d != nil {
		ns.RunningImage = firstImage(d.Spec.Template.Spec.Containers)
		ns.Running = lane.DigestOf(ns.RunningImage)
	}
	ns.Drift = ns.Desired != "" && ns.Running != "" && ns.Desired != ns.Running
	res := judgeLive(d)
	ns.Phase, ns.Reason, ns.Message = res.Phase, res.Reason, res.Message
	ns.Ready, ns.Replicas = res.Ready, res.Desired
	if res.Phase == status.Ready {
		ns.Message = ""
		if res.Desired == 0 && ns.Suspended {
			// Nothing runs: its template (perhaps one applied while suspended) is not
			// ready, it is stopped.
			ns.Phase = status.Suspended
		}
	}
	ns.Roles = e.roleStatuses(name, n, st, deps, judgeLive)
	return ns
}

// statusNodes are every node the file, the state or the cluster knows: the file's in its
// order, then the others by name.
func statusNodes(t Target, doc *state.Document, deps []*appsv1.Deployment) []string {
	var names []string
	seen := map[string]bool{}
	addName := func(n string) {
		if n != "" && !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	for _, n := range t.Group.Nodes {
		addName(n.Name)
	}
	var extra []string
	if doc != nil {
		for n := range doc.Nodes {
			extra = append(extra, n)
		}
	}
	for _, d := range deps {
		extra = append(extra, d.Labels[spec.LabelNode])
	}
	slices.Sort(extra)
	for _, n := range extra {
		addName(n)
	}
	return names
}

// roleStatuses reports every role of node the file, the state or the cluster knows.
func (e *Engine) roleStatuses(node string, n *spec.Node, st *state.NodeState, deps []*appsv1.Deployment, judge func(*appsv1.Deployment) status.Result) []status.Role {
	want := map[string]int32{}
	live := map[string]*appsv1.Deployment{}
	var names []string
	add := func(r string) {
		if _, ok := want[r]; !ok {
			want[r] = 0
			names = append(names, r)
		}
	}
	if n != nil {
		for _, r := range n.Roles {
			add(r.Name)
			want[r.Name] = r.Replicas
		}
	}
	if st != nil {
		for r, rs := range st.Roles {
			add(r)
			want[r] = rs.Replicas // what apply last set, and what resume returns to
		}
	}
	for _, d := range deps {
		if d.Labels[spec.LabelNode] == node && d.Labels[spec.LabelRole] != "" {
			r := d.Labels[spec.LabelRole]
			add(r)
			live[r] = d
		}
	}
	slices.Sort(names)
	var out []status.Role
	for _, r := range names {
		res := judge(live[r])
		rs := status.Role{Name: r, Ready: res.Ready, Replicas: res.Desired, Want: want[r],
			Phase: res.Phase, Reason: res.Reason, Message: res.Message}
		if res.Phase == status.Ready {
			rs.Message = ""
		}
		out = append(out, rs)
	}
	return out
}
