package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const sidecarGroup = `group: {{GROUP}}
nodes:
  web:
    image: {rootfs: nodes/web/rootfs, command: [/bin/app]}
    init: none
    secretsFrom:
      openbao: {address: "http://bao.invalid:8200"}
    roles:
      sso:
        service: {image: {rootfs: nodes/web/rootfs, user: "65532", command: [/bin/app]}}
        sidecarSecrets:
          pw: {path: web/db, key: password, restart: true}
          app.conf: {path: web/db, template: "password={{ .password }}"}
        companion: true
`

// TestSecretsSidecarApplies: a service role with sidecar secrets (its image runs as a non-root
// user, as a service image must) deploys (on kwok, which runs no program: the sidecar's own
// behaviour is the sidecar package's tests and needs the real node): the sidecar image is an
// index of linux/amd64 and arm64 pushed to <ns>/<node>-<role>/secrets and pinned by digest,
// the pod has the native sidecar and the companion, and a second plan has nothing to do.
func TestSecretsSidecarApplies(t *testing.T) {
	g := NewGroup(t, "sidecar", sidecarGroup, "web")
	apply := g.MustRun(0, "apply", "--yes")
	if !strings.Contains(apply.Stderr+apply.Stdout, "/"+g.Name+"/web-sso/secrets:c-") {
		t.Errorf("apply pushed no sidecar image to %s/web-sso/secrets:\n%s", g.Name, apply)
	}
	d, err := g.Kube.Clientset.AppsV1().Deployments(g.Name).Get(context.Background(), "web-sso", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ps := d.Spec.Template.Spec
	if len(ps.InitContainers) != 1 || ps.InitContainers[0].Name != "secrets" || len(ps.Containers) != 2 || ps.Containers[1].Name != "companion" {
		t.Fatalf("pod template: init containers %d, containers %d", len(ps.InitContainers), len(ps.Containers))
	}
	img := ps.InitContainers[0].Image
	if !strings.HasPrefix(img, g.Env.Registry+"/"+g.Name+"/web-sso/secrets@sha256:") {
		t.Fatalf("sidecar image %s, want it by digest in %s/%s/web-sso/secrets", img, g.Env.Registry, g.Name)
	}
	ref, err := name.ParseReference(img, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := remote.Index(ref)
	if err != nil {
		t.Fatal(err)
	}
	m, err := ix.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var plats []string
	for _, desc := range m.Manifests {
		plats = append(plats, desc.Platform.String())
	}
	if strings.Join(plats, ",") != "linux/amd64,linux/arm64" {
		t.Errorf("sidecar index platforms %v", plats)
	}
	if plan := g.MustRun(0, "plan"); !strings.Contains(plan.Stdout, "No changes.") {
		t.Errorf("second plan:\n%s", plan)
	}
}
