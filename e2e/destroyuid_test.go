package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slipway.dev/slipway/internal/devcluster/devtest"
	"slipway.dev/slipway/internal/engine"
	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

// remaking is the dev cluster's API server with someone else in the gap between destroy's
// judgement and its deletes: before the first delete of an object (or of the namespace) goes
// out, that object is deleted and made again, without slipway's labels, by someone else.
type remaking struct {
	*kube.Client
	t      *testing.T
	remade string // the UID of the object someone else made
}

func (r *remaking) Delete(ctx context.Context, k plan.Key, uid string) error {
	if r.remade == "" {
		cms := r.Clientset.CoreV1().ConfigMaps(k.Namespace)
		if err := cms.Delete(ctx, k.Name, metav1.DeleteOptions{}); err != nil {
			r.t.Fatal(err)
		}
		r.remade = r.remakeConfigMap(ctx, k.Namespace, k.Name)
	}
	return r.Client.Delete(ctx, k, uid)
}

func (r *remaking) DeleteNamespaceAndWait(ctx context.Context, ns, uid string) error {
	if r.remade == "" {
		if err := r.Client.DeleteNamespaceAndWait(ctx, ns, ""); err != nil {
			r.t.Fatal(err)
		}
		made, err := r.Clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil {
			r.t.Fatal(err)
		}
		r.remade = string(made.UID)
	}
	return r.Client.DeleteNamespaceAndWait(ctx, ns, uid)
}

// remakeConfigMap makes ConfigMap ns/name as someone else would (no slipway label), once
// the one of that name is gone, and returns its UID.
func (r *remaking) remakeConfigMap(ctx context.Context, ns, name string) string {
	cms := r.Clientset.CoreV1().ConfigMaps(ns)
	deadline := time.Now().Add(30 * time.Second)
	for {
		made, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"theirs": "yes"}}, metav1.CreateOptions{})
		if err == nil {
			return string(made.UID)
		}
		if !apierrors.IsAlreadyExists(err) || time.Now().After(deadline) {
			r.t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond) // the old one's finalizers run; polled to a deadline
	}
}

// TestDestroyDeletesOnlyWhatItJudged (issue 35 item 17): destroy's deletes carry the UIDs of
// what it judged the group's. An object, or a namespace, deleted and made again by someone
// else between the judgement and the delete stays; destroy fails naming it.
func TestDestroyDeletesOnlyWhatItJudged(t *testing.T) {
	env := devtest.Env(t)
	c, err := kube.New(env.Kubeconfig, "")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		ownNS    bool // slipway made the namespace for the group: destroy deletes it
		want     string
		stillHas func(ns string) (string, error)
	}{
		{name: "an object in a namespace slipway did not make", want: "precondition",
			stillHas: func(ns string) (string, error) {
				cm, err := c.Clientset.CoreV1().ConfigMaps(ns).Get(ctx, "web-env", metav1.GetOptions{})
				return string(cm.GetUID()), err
			}},
		{name: "the namespace slipway made", ownNS: true, want: "precondition",
			stillHas: func(ns string) (string, error) {
				live, err := c.Clientset.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
				if err == nil && live.DeletionTimestamp != nil {
					err = fmt.Errorf("namespace %s is being deleted", ns)
				}
				return string(live.GetUID()), err
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			group := fmt.Sprintf("uid-%x", time.Now().UnixNano()%0xffffff)
			var labels map[string]string
			if tc.ownNS {
				labels = map[string]string{spec.LabelManagedBy: spec.ManagedBy, spec.LabelGroup: group}
			}
			if err := c.EnsureNamespace(ctx, group, labels); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.DeleteNamespaceAndWait(context.Background(), group, "") })
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "web-env", Labels: map[string]string{
				spec.LabelManagedBy: spec.ManagedBy, spec.LabelGroup: group, spec.LabelNode: "web"}}}
			if _, err := c.Clientset.CoreV1().ConfigMaps(group).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			store, err := state.Open(ctx, "file://"+filepath.Join(t.TempDir(), "state.json"), group, nil)
			if err != nil {
				t.Fatal(err)
			}
			r := &remaking{Client: c, t: t}
			tgt := engine.Target{Group: &spec.Group{Name: group}, Namespace: group, Store: store}
			_, err = engine.New(engine.Options{Kube: r}).Destroy(ctx, tgt, engine.DestroyOptions{})
			if err == nil || !strings.Contains(strings.ToLower(err.Error()), tc.want) {
				t.Errorf("destroy = %v, want a refusal saying %q", err, tc.want)
			}
			if r.remade == "" {
				t.Fatal("destroy deleted nothing")
			}
			uid, err := tc.stillHas(group)
			if err != nil || uid != r.remade {
				t.Errorf("what someone else made after destroy: uid %q, %v; want it there, uid %s", uid, err, r.remade)
			}
		})
	}
}
