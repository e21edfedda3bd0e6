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

// ForTarget is ForDeployment with no deployment id.
func (g *Group) ForTarget(target string) (*Group, error) { return g.ForDeployment(target, "") }

// ForDeployment is the group as the deployment (target, id) deploys it: every node for
// TargetAll (or ""), else only the nodes of that app. Its Name is the deployment's key
// (Identity.Key: `<group>.<app>`, `<group>.<target>.<id>`): the name of its state and lock
// and the group label of its objects, so that two deployments never share either; Identity
// keeps the parts. An app no node names is refused, naming the targets there are; so is an
// id that is not a DNS label.
func (g *Group) ForDeployment(target, id string) (*Group, error) {
	if err := CheckDeploymentID(id, "the deployment id"); err != nil {
		return nil, err
	}
	ident := Identity{Group: g.Name, Target: target, ID: id}
	if ident.PerApp() && !isLabel(target, false) {
		// Checked before the key is made: a target with a '.' would reach another's key.
		return nil, fmt.Errorf("target %q: not a DNS label %s", target, labelRule)
	}
	if !ident.PerApp() && id == "" {
		return g, nil
	}
	out := *g
	out.Identity = ident
	out.Name = ident.Key()
	if !ident.PerApp() {
		return &out, nil
	}
	out.Nodes, out.Whole = nil, g
	for _, n := range g.Nodes {
		if n.App == target {
			out.Nodes = append(out.Nodes, n)
		}
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
