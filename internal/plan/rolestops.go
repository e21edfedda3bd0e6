package plan

import (
	"slices"
	"strings"

	"slipway.dev/slipway/internal/spec"
)

// stoppedRoles are the roles that stop before the node's Deployment changes, sorted: roles on
// the node's image when its pod template changes (any change, not only the image: a role must
// never run beside a node it does not match), and a service role whose own template changes
// with an image: its own (the service's), or the node's, or a state migration of the node
// (FR-006a: the main pod's migrations run with the new image). A service role whose template
// changes without one (its sidecarSecrets, its env) is not stopped: it rolls with its new
// template at its start. A role created in this run has nothing running to stop.
func stoppedRoles(n *spec.Node, main *Change, migration bool, roleKey func(*spec.Role) Key, ix *Index) []string {
	templateChanges := main != nil && main.Action != Create && diffTouches(main.Diff, "spec.template.")
	nodeImage := migration || main != nil && main.Action != Create && imageChanges(main)
	var stopped []string
	for _, r := range n.Roles {
		rc := ix.Change(roleKey(r))
		if rc != nil && rc.Action == Create {
			continue
		}
		switch {
		case r.Service == nil && templateChanges:
			stopped = append(stopped, r.Name)
		case r.Service != nil && rc != nil && diffTouches(rc.Diff, "spec.template.") && (nodeImage || imageChanges(rc)):
			stopped = append(stopped, r.Name)
		}
	}
	slices.Sort(stopped)
	return stopped
}

// imageChanges reports whether a Deployment's change gives one of its pod's containers (the
// node's, or the service's and its companion's) another image. A change whose fields are not
// known field by field (a replace, an update without a diff) counts as one.
func imageChanges(c *Change) bool {
	if c.Action != Update || len(c.Diff) == 0 {
		return true
	}
	return slices.ContainsFunc(c.Diff, func(d FieldDiff) bool {
		rest, ok := strings.CutPrefix(d.Path, "spec.template.spec.containers[")
		if !ok {
			return false
		}
		_, field, _ := strings.Cut(rest, "]")
		// A container added or removed whole is a change of the image it runs.
		return field == ".image" || field == ""
	})
}
