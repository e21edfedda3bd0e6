package kube_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slipway.dev/slipway/internal/devcluster/devtest"
	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/spec"
)

// TestRunJobRefusesSomeoneElsesJob: a Job named like the state step's that slipway did not
// make for the group is refused, named, and left as it is (issue 35, item 3).
func TestRunJobRefusesSomeoneElsesJob(t *testing.T) {
	env := devtest.Env(t)
	c, err := kube.New(env.Kubeconfig, "")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns := fmt.Sprintf("jobtest-%x", time.Now().UnixNano()%0xffffff)
	if err := c.EnsureNamespace(ctx, ns, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.DeleteNamespaceAndWait(context.Background(), ns, "") })
	job := func(labels map[string]string) *batchv1.Job {
		return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "web-state", Namespace: ns, Labels: labels},
			Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "x", Image: "registry.test/x@sha256:" + strings.Repeat("0", 64)}}}}}}
	}
	for _, tc := range []struct {
		name   string
		labels map[string]string
	}{
		{"unlabelled", map[string]string{"app": "theirs"}},
		{"another group's", map[string]string{spec.LabelManagedBy: spec.ManagedBy, spec.LabelGroup: "other"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			theirs, err := c.Clientset.BatchV1().Jobs(ns).Create(ctx, job(tc.labels), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			err = c.RunJob(ctx, job(map[string]string{spec.LabelManagedBy: spec.ManagedBy, spec.LabelGroup: "demo"}), time.Minute)
			want := "job " + ns + "/web-state exists and slipway did not make it for group demo: slipway will not delete it"
			if err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Fatalf("RunJob = %v, want %s…", err, want)
			}
			got, err := c.Clientset.BatchV1().Jobs(ns).Get(ctx, "web-state", metav1.GetOptions{})
			if err != nil || got.UID != theirs.UID {
				t.Fatalf("their Job after RunJob: %v (uid %v, want %v)", err, got.GetUID(), theirs.UID)
			}
			bg := metav1.DeletePropagationBackground
			if err := c.Clientset.BatchV1().Jobs(ns).Delete(ctx, "web-state", metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
				t.Fatal(err)
			}
			for deadline := time.Now().Add(time.Minute); ; {
				if _, err := c.Clientset.BatchV1().Jobs(ns).Get(ctx, "web-state", metav1.GetOptions{}); err != nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("their Job was not gone within a minute")
				}
				time.Sleep(200 * time.Millisecond)
			}
		})
	}
}
