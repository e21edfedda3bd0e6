//go:build devenv

package state

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestKubernetesForeignSecretCluster: a Secret named slipway-state-<group> that slipway did not
// make is neither read, overwritten nor deleted: each is refused, naming it (issue 35, item 18).
func TestKubernetesForeignSecretCluster(t *testing.T) {
	ctx := context.Background()
	_, c, ns := clusterNamespace(t)
	theirs := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "slipway-state-demo", Namespace: ns,
		Labels: map[string]string{"app": "theirs"}}, Data: map[string][]byte{"tfstate": []byte("theirs")}}
	if _, err := c.Clientset.CoreV1().Secrets(ns).Create(ctx, theirs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	b := kubeOpener(c, ns)(t, "demo")
	want := "state demo: secret " + ns + "/slipway-state-demo exists and slipway did not make it for group demo (it lacks the labels app.kubernetes.io/component=state, app.kubernetes.io/managed-by=slipway, slipway.dev/group=demo)"
	check := func(what string, err error) {
		t.Helper()
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s = %v, want %s…", what, err, want)
		}
	}
	_, err := b.Read(ctx)
	check("Read", err)
	check("Write", b.Write(ctx, &Document{}))
	check("Delete", b.Delete(ctx))
	got, err := c.Clientset.CoreV1().Secrets(ns).Get(ctx, "slipway-state-demo", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the Secret is gone: %v", err)
	}
	if string(got.Data["tfstate"]) != "theirs" || got.Labels["app"] != "theirs" {
		t.Errorf("the Secret was changed: labels %v, data %q", got.Labels, got.Data["tfstate"])
	}
}
