// Package rendertest gives render's tests, those of internal/render and those of e2e/render
// that dry-run its objects on the dev cluster, one input with stable digests and machine IDs.
package rendertest

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/uuid"

	"slipway.dev/slipway/internal/render"
	"slipway.dev/slipway/internal/spec"
)

// SecretKey is the group's secret key of render's golden files.
var SecretKey = []byte("render-test-key-of-32-bytes-long")

// Input gives every node and role a digest and a machine ID derived from its name, so the
// golden files are stable.
func Input(g *spec.Group) render.Input {
	in := render.Input{Group: g, Images: map[string]string{}, MachineIDs: map[string]string{}, SecretKey: SecretKey}
	ns := g.Namespace
	if ns == "" {
		ns = g.Name
	}
	if g.Spire != nil {
		in.Spire = &render.Spire{Cluster: "0b5c7a2e-1d2f-4c3b-9e8a-7f6d5c4b3a21-" + ns, Bundle: "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"}
	}
	image := func(repo string) string {
		return fmt.Sprintf("registry.test:5000/%s/%s@sha256:%x", ns, repo, sha256.Sum256([]byte(repo)))
	}
	id := func(key string) string { return uuid.NewSHA1(uuid.NameSpaceOID, []byte(g.Name+"/"+key)).String() }
	for _, n := range g.Nodes {
		in.Images[n.Name] = image(n.Name)
		in.MachineIDs[n.Name] = id(n.Name)
		for _, r := range n.Roles {
			if r.Service != nil {
				key := spec.RoleObjectName(n.Name, r.Name)
				in.Images[key] = image(key)
			}
			if len(r.SidecarSecrets) > 0 {
				key := spec.SecretsImageName(n.Name, r.Name)
				in.Images[key] = image(key)
			}
		}
	}
	return in
}

// Find is the object of objs of that kind and name, as a T.
func Find[T render.Object](objs []render.Object, kind, name string) (T, bool) {
	var zero T
	for _, o := range objs {
		if o.GetObjectKind().GroupVersionKind().Kind == kind && o.GetName() == name {
			t, ok := o.(T)
			return t, ok
		}
	}
	return zero, false
}

// ReadDir is each file of dir by name, with its content: a rendered package.
func ReadDir(t testing.TB, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(b)
	}
	return out
}
