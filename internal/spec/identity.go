package spec

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// Identity is a deployment: a group, the target it deploys (an app, or every node) and the
// deployment id (FR-021). Two deployments of one cluster never share its Key: it is the state
// key and lock, the value of the slipway.dev/group label on the namespace and every object,
// the default secrets role, the owner of the DNS records, the SPIRE lane's per-deployment
// data (issue 46).
type Identity struct {
	Group  string // the group file's name
	Target string // the app of a per-app target; "" (or TargetAll) for every node
	ID     string // the deployment id; "" for none
}

// hashedSuffix ends the hashed form of a key, the only key with four segments: a real key has
// one (group), two (group.app) or three (group.target.id), so no real key equals a hashed one.
const hashedSuffix = "h"

// maxKey is the longest key: a label value holds at most 63 characters.
const maxKey = 63

// Key is the deployment's string: `shop`, `shop.front` (target front), `shop.front.x7`
// (deployment id x7) or `shop.all.x7` (every node, deployment id x7). Group, app and id are
// DNS labels, which hold no '.', and no app is called `all`, so no two deployments reach one
// key by joining. A key over 63 characters becomes `<group prefix>.<hash>.<hash>.h`: 40 hex
// digits of the SHA-256 of the three parts, split in two labels; still a label value and a
// part of an object name, and never a real key (four segments).
func (i Identity) Key() string {
	target := i.Target
	if target == TargetAll {
		target = ""
	}
	key := i.Group
	switch {
	case i.ID != "":
		key += "." + cmp.Or(target, TargetAll) + "." + i.ID
	case target != "":
		key += "." + target
	}
	if len(key) <= maxKey {
		return key
	}
	sum := sha256.Sum256([]byte(i.Group + "\x00" + target + "\x00" + i.ID))
	h := hex.EncodeToString(sum[:20])
	prefix := strings.TrimRight(i.Group[:min(len(i.Group), 16)], "-")
	return prefix + "." + h[:20] + "." + h[20:] + "." + hashedSuffix
}

// PerApp reports whether the deployment is one app's nodes rather than every node.
func (i Identity) PerApp() bool { return i.Target != "" && i.Target != TargetAll }

// TargetName is the deployment's target as the operator writes it: the app, or `all`.
func (i Identity) TargetName() string {
	if i.PerApp() {
		return i.Target
	}
	return TargetAll
}

// String names the deployment for a message: `group shop`, `group shop, target front,
// deployment id x7`.
func (i Identity) String() string {
	s := "group " + i.Group
	if i.PerApp() {
		s += ", target " + i.Target
	}
	if i.ID != "" {
		s += ", deployment id " + i.ID
	}
	return s
}

// CheckDeploymentID refuses a deployment id that is not a DNS label: it is a segment of the
// deployment's key and the last part of its namespace (FR-021). from names where the id came
// from (--deployment-id or SLIPWAY_DEPLOYMENT_ID).
func CheckDeploymentID(id, from string) error {
	if id == "" || isLabel(id, false) {
		return nil
	}
	return fmt.Errorf("deployment id %q (from %s) is not a DNS label %s", id, from, labelRule)
}

// Ident is the group's deployment: the one ForDeployment made it for, else the group itself
// (every node, no deployment id).
func (g *Group) Ident() Identity {
	if g.Identity.Group != "" {
		return g.Identity
	}
	return Identity{Group: g.Name}
}

// ParseKey splits a key into its deployment; ok is false for a hashed key (its parts are in
// the state document) and for a string that is no key.
func ParseKey(key string) (id Identity, ok bool) {
	parts := strings.Split(key, ".")
	for _, p := range parts {
		if !isLabel(p, false) {
			return Identity{}, false
		}
	}
	switch len(parts) {
	case 1:
		return Identity{Group: parts[0]}, true
	case 2:
		if parts[1] == TargetAll {
			return Identity{}, false
		}
		return Identity{Group: parts[0], Target: parts[1]}, true
	case 3:
		t := parts[1]
		if t == TargetAll {
			t = ""
		}
		return Identity{Group: parts[0], Target: t, ID: parts[2]}, true
	}
	return Identity{}, false
}

// LegacyKey is the key releases before deployment identities gave the deployment: the
// group's name, `-<app>` for a per-app target, nothing for the id. It equals Key for a plain
// group; for the others a plan names it when it finds it, as it may be another group's too
// (`shop-front`), and never takes it over (docs/state.md).
func (i Identity) LegacyKey() string {
	if i.PerApp() {
		return i.Group + "-" + i.Target
	}
	return i.Group
}

// IsSystemNamespace reports whether ns is one of the cluster's own (`default`, `kube-*`),
// where slipway never deploys (issue 46 item 6).
func IsSystemNamespace(ns string) bool {
	return ns == "default" || strings.HasPrefix(ns, "kube-")
}
