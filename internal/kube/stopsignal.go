package kube

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slipway.dev/slipway/internal/spec"
)

// StopSignalSupported reports whether the API server keeps a container's lifecycle.stopSignal
// (the ContainerStopSignals feature): a server without it drops the field silently, so the
// only way to know is to ask. It dry-runs the create of a Deployment in ns, which stores
// nothing; the Deployment needs no RBAC beyond what apply uses.
func (c *Client) StopSignalSupported(ctx context.Context, ns string) (bool, error) {
	c.mu.Lock()
	known := c.stopSig
	c.mu.Unlock()
	if known != nil {
		return *known, nil // a feature gate of the API server: one answer for every namespace
	}
	ok, err := c.stopSignalProbe(ctx, ns)
	if err == nil {
		c.mu.Lock()
		c.stopSig = &ok
		c.mu.Unlock()
	}
	return ok, err
}

func (c *Client) stopSignalProbe(ctx context.Context, ns string) (bool, error) {
	sig := corev1.SIGRTMINPLUS3
	zero := int32(0)
	labels := map[string]string{spec.LabelName: "slipway-stop-signal-probe"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "slipway-stop-signal-probe-", Namespace: ns, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: &zero,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					// The API accepts a stop signal only with the pod's OS set.
					OS: &corev1.PodOS{Name: corev1.Linux},
					Containers: []corev1.Container{{
						Name: "probe", Image: "registry.invalid/probe",
						Lifecycle: &corev1.Lifecycle{StopSignal: &sig},
					}},
				},
			},
		},
	}
	out, err := c.Clientset.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		return false, fmt.Errorf("namespace %s: dry-run a Deployment with a stop signal: %w", ns, err)
	}
	cs := out.Spec.Template.Spec.Containers
	return len(cs) == 1 && cs[0].Lifecycle != nil && cs[0].Lifecycle.StopSignal != nil, nil
}
