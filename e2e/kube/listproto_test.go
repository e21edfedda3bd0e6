package kube_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"slipway.dev/slipway/internal/devcluster/devtest"
	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/render"
	"slipway.dev/slipway/internal/spec"
)

// listGroup is a node with every built-in kind slipway makes: policies, account, claim,
// Services (a published one), a Deployment and a role's, a disruption budget, config and a
// Secret.
const listGroup = `group: listproto
nodes:
  web:
    image: {rootfs: rootfs}
    state: {size: 1Gi}
    firewall: {served: [80, 443], published: [443]}
    disruption: {minAvailable: 1}
    roles:
      worker: {replicas: 1, ports: [8080]}
`

// Issue 17: the built-in kinds are listed as protobuf, and give exactly the objects the JSON
// LIST gives, numbers, quantities, times and all, on the dev cluster's API server.
func TestListAsProtobufMatchesJSON(t *testing.T) {
	env := devtest.Env(t)
	c, err := kube.New(env.Kubeconfig, "")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns := fmt.Sprintf("listproto-%x", time.Now().UnixNano()%0xffffff)
	objs := listObjects(t, ns)
	for _, o := range objs {
		if _, err := c.Apply(ctx, o, kube.ApplyOptions{Force: true}); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = c.DeleteNamespaceAndWait(context.Background(), ns, "") })
	listed := 0
	for _, gvk := range kube.ManagedKinds {
		if !kube.IsBuiltIn(gvk) {
			continue
		}
		t.Run(gvk.Kind, func(t *testing.T) {
			// The controllers write status meanwhile: compare two lists of the same versions.
			deadline := time.Now().Add(30 * time.Second)
			for {
				asPlan, asJSON, err := c.ListBothWays(ctx, gvk, ns)
				if err != nil {
					t.Fatal(err)
				}
				if len(asJSON) == 0 {
					t.Fatalf("no %s in %s to compare", gvk.Kind, ns)
				}
				for _, u := range asJSON {
					unstructured.RemoveNestedField(u.Object, "metadata", "managedFields")
				}
				if versions(asPlan) == versions(asJSON) {
					if diff := cmp.Diff(asJSON, asPlan); diff != "" {
						t.Errorf("%s listed as protobuf (-JSON +protobuf):\n%s", gvk.Kind, diff)
					}
					listed += len(asPlan)
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s kept changing between two lists", gvk.Kind)
				}
				time.Sleep(100 * time.Millisecond) // polling with a deadline: the next pair of lists
			}
		})
	}
	if listed < len(objs)-1 { // the namespace is not listed
		t.Errorf("compared %d objects, applied %d", listed, len(objs))
	}
}

func versions(us []*unstructured.Unstructured) string {
	s := ""
	for _, u := range us {
		s += u.GetName() + "@" + u.GetResourceVersion() + " "
	}
	return s
}

// listObjects renders listGroup into ns, with a ConfigMap and a Secret of data beside it.
func listObjects(t *testing.T, ns string) []render.Object {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "rootfs"), 0o755); err != nil {
		t.Fatal(err)
	}
	g, err := spec.Parse(filepath.Join(dir, "slipway.yaml"), []byte(listGroup), dir)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := render.Objects(render.Input{Group: g, Namespace: ns,
		Images:     map[string]string{"web": "r/web@sha256:" + strings.Repeat("0", 64), "web-worker": "r/web@sha256:" + strings.Repeat("0", 64)},
		MachineIDs: map[string]string{"web": strings.Repeat("1", 32)}})
	if err != nil {
		t.Fatal(err)
	}
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{spec.LabelGroup: "listproto"}}
	}
	objs = append(objs,
		&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: meta("conf"), Data: map[string]string{"a.conf": "x = 1\n"}},
		&corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: meta("token"), Data: map[string][]byte{"token": []byte("s3cret")}})
	return objs
}
