package engine

import (
	"context"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"slipway.dev/slipway/internal/render"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
	"slipway.dev/slipway/internal/status"
)

// GroupStatus is what `slipway status` reports: per node what the state wants, what the
// cluster runs, and how the last rollout ended.
type GroupStatus struct {
	Group     string `json:"group"`
	Namespace string `json:"namespace"`
	// Applied is false when the state holds no document: nothing was applied yet.
	Applied     bool         `json:"applied"`
	StateSerial int64        `json:"stateSerial"`
	Suspended   bool         `json:"suspended"`
	Nodes       []NodeStatus `json:"nodes"`
}

// NodeStatus is one node.
type NodeStatus struct {
	Node string `json:"node"`
	// DesiredImage is the image (ref@digest) the state recorded as desired, Desired its digest.
	DesiredImage string `json:"desiredImage,omitempty"`
	Desired      string `json:"desired,omitempty"`
	// RunningImage is the image the live Deployment names, Running its digest; both empty
	// when the Deployment does not exist.
	RunningImage string `json:"runningImage,omitempty"`
	Running      string `json:"running,omitempty"`
	// Drift: the cluster runs another digest than the state wants (after a rollback, or a
	// hand edit); the next apply rolls out again.
	Drift bool `json:"drift"`
	// Ready pods of the current template, of Replicas (the Deployment's spec.replicas).
	Ready    int32 `json:"ready"`
	Replicas int32 `json:"replicas"`
	// Phase of the Deployment's current template: ready, progressing or failed (with Reason
	// and Message), or absent when the Deployment does not exist.
	Phase       string         `json:"phase"`
	Reason      string         `json:"reason,omitempty"`
	Message     string         `json:"message,omitempty"`
	Roles       []RoleStatus   `json:"roles,omitempty"`
	LastRollout *state.Rollout `json:"lastRollout,omitempty"`
	Suspended   bool           `json:"suspended"`
	// InFile is false for a node the state or the cluster holds but the group file no longer
	// names (the next apply removes it).
	InFile bool `json:"inFile"`
	// InState is false for a node not applied yet.
	InState bool `json:"inState"`
}

// RoleStatus is one role of a node.
type RoleStatus struct {
	Name string `json:"name"`
	// Ready pods of the current template, of Replicas (the Deployment's spec.replicas).
	Ready    int32 `json:"ready"`
	Replicas int32 `json:"replicas"`
	// Want is the number of replicas the role runs when started (the state's, else the file's).
	Want    int32  `json:"want"`
	Phase   string `json:"phase"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// PhaseAbsent is the Phase of a node or role whose Deployment does not exist.
const PhaseAbsent = "absent"

// Status reads the state and the group's Deployments, ReplicaSets and pods and reports every
// node the group file, the state or the cluster knows. It changes nothing and takes no lock.
func (e *Engine) Status(ctx context.Context, t Target) (*GroupStatus, error) {
	if _, err := e.o.Kube.Ping(ctx); err != nil {
		return nil, err
	}
	doc, err := readState(ctx, t)
	if err != nil {
		return nil, err
	}
	wl, err := e.o.Kube.ListWorkloads(ctx, t.Namespace, render.LabelGroup+"="+t.Group.Name)
	if err != nil {
		return nil, err
	}
	gs := &GroupStatus{Group: t.Group.Name, Namespace: t.Namespace, Suspended: isSuspended(doc)}
	if doc != nil {
		gs.Applied, gs.StateSerial = true, doc.Serial
	}
	now := time.Now()
	deps := map[string]*appsv1.Deployment{}
	for _, d := range wl.Deployments {
		deps[d.Name] = d
	}
	judge := func(d *appsv1.Deployment) status.Result {
		if d == nil {
			return status.Result{Phase: PhaseAbsent}
		}
		var rss []*appsv1.ReplicaSet
		for _, rs := range wl.ReplicaSets {
			if rs.Labels[render.LabelName] == d.Name {
				rss = append(rss, rs)
			}
		}
		var pods []*corev1.Pod
		for _, p := range wl.Pods {
			if p.Labels[render.LabelName] == d.Name {
				pods = append(pods, p)
			}
		}
		// No Since: a status read never times a rollout out; it says where it stands.
		return status.Rollout(status.Input{Deployment: d, ReplicaSets: rss, Pods: pods, Now: now})
	}

	// Every node the file, the state or the cluster knows: the file's in its order, then
	// the others by name.
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
	for _, d := range wl.Deployments {
		extra = append(extra, d.Labels[render.LabelNode])
	}
	slices.Sort(extra)
	for _, n := range extra {
		addName(n)
	}

	for _, name := range names {
		n := t.Group.Node(name)
		var st *state.NodeState
		if doc != nil {
			st = doc.Nodes[name]
		}
		ns := NodeStatus{Node: name, InFile: n != nil, InState: st != nil}
		if st != nil {
			if st.Image.Digest != "" {
				ns.DesiredImage = st.Image.Ref + "@" + st.Image.Digest
				ns.Desired = st.Image.Digest
			}
			ns.LastRollout = st.LastRollout
			ns.Suspended = st.Suspended
		}
		d := deps[name]
		if d != nil {
			ns.RunningImage = firstImage(d.Spec.Template.Spec.Containers)
			ns.Running = digestOf(ns.RunningImage)
		}
		ns.Drift = ns.Desired != "" && ns.Running != "" && ns.Desired != ns.Running
		res := judge(d)
		ns.Phase, ns.Reason, ns.Message = string(res.Phase), res.Reason, res.Message
		ns.Ready, ns.Replicas = res.Ready, res.Desired
		if res.Phase == status.Ready {
			ns.Message = ""
		}
		ns.Roles = e.roleStatuses(name, n, st, wl.Deployments, judge)
		gs.Nodes = append(gs.Nodes, ns)
	}
	return gs, nil
}

// roleStatuses reports every role of node the file, the state or the cluster knows.
func (e *Engine) roleStatuses(node string, n *spec.Node, st *state.NodeState, deps []*appsv1.Deployment, judge func(*appsv1.Deployment) status.Result) []RoleStatus {
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
		if d.Labels[render.LabelNode] == node && d.Labels[render.LabelRole] != "" {
			r := d.Labels[render.LabelRole]
			add(r)
			live[r] = d
		}
	}
	slices.Sort(names)
	var out []RoleStatus
	for _, r := range names {
		res := judge(live[r])
		rs := RoleStatus{Name: r, Ready: res.Ready, Replicas: res.Desired, Want: want[r],
			Phase: string(res.Phase), Reason: res.Reason, Message: res.Message}
		if res.Phase == status.Ready {
			rs.Message = ""
		}
		out = append(out, rs)
	}
	return out
}
