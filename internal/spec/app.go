package spec

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// TargetAll is the target that holds every node of a group, in the group's namespace
// (FR-007); any other target is an app, whose nodes go to `<namespace>-<app>`.
const TargetAll = "all"

// nodeApp decodes a node's `app`: the per-app target the node belongs to (FR-007).
func (d *decoder) nodeApp(m map[string]*yaml.Node, path string, nd *Node) {
	v := m["app"]
	if v == nil {
		return
	}
	s, ok := d.str(v, path+".app")
	switch {
	case !ok:
	case !isLabel(s, false):
		d.errAt(deref(v), path+".app", "%q is not a DNS label %s", s, labelRule)
	case s == TargetAll:
		d.errAt(deref(v), path+".app", "%q is the target of every node, not an app's name", s)
	default:
		nd.App = s
	}
}

// Apps are the apps the group's nodes name, sorted, each once.
func (g *Group) Apps() []string {
	var apps []string
	for _, n := range g.Nodes {
		if n.App != "" && !slices.Contains(apps, n.App) {
			apps = append(apps, n.App)
		}
	}
	slices.Sort(apps)
	return apps
}

// ForTarget is the group as target deploys it: every node for TargetAll (or ""), else only
// the nodes of that app, as the group `<group>-<app>`: the name of the target's state and
// lock, and the group label of its objects, so that two targets never share either. An app no
// node names is refused, naming the targets there are; a name longer than a label is refused.
func (g *Group) ForTarget(target string) (*Group, error) {
	if target == "" || target == TargetAll {
		return g, nil
	}
	out := *g
	out.Name, out.Nodes, out.Whole = g.Name+"-"+target, nil, g
	for _, n := range g.Nodes {
		if n.App == target {
			out.Nodes = append(out.Nodes, n)
		}
	}
	if !isLabel(out.Name, false) {
		return nil, fmt.Errorf("target %q: group %s of the target is not a DNS label of at most 63 characters", target, out.Name)
	}
	if len(out.Nodes) == 0 {
		return nil, &EmptyTargetError{Target: &out, App: target,
			msg: fmt.Sprintf("target %q: no node of group %s (%s) has app %q; targets: %s",
				target, g.Name, g.File, target, strings.Join(append([]string{TargetAll}, g.Apps()...), ", "))}
	}
	return &out, nil
}

// EmptyTargetError is ForTarget's refusal of an app no node of the file names: a typo, or a
// target whose last node moved to another app. Target is that target with no nodes, for the
// verbs that go on with it when a state of it exists (its nodes and objects are then to be
// removed, or destroyed).
type EmptyTargetError struct {
	Target *Group
	App    string
	msg    string
}

func (e *EmptyTargetError) Error() string { return e.msg }
