package kube

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Workloads are the Deployments, ReplicaSets and pods of one namespace that carry a label
// selector, as one read: what `slipway status` judges each rollout from.
type Workloads struct {
	Deployments []*appsv1.Deployment
	ReplicaSets []*appsv1.ReplicaSet
	Pods        []*corev1.Pod
}

// ListWorkloads lists the Deployments, ReplicaSets and pods of ns ("": of every namespace)
// that carry selector (one LIST per kind). A namespace that does not exist yields none.
func (c *Client) ListWorkloads(ctx context.Context, ns, selector string) (*Workloads, error) {
	opts := metav1.ListOptions{LabelSelector: selector}
	out := &Workloads{}
	deps, err := c.Clientset.AppsV1().Deployments(ns).List(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("list deployments in %s: %w", ns, err)
	}
	for i := range deps.Items {
		out.Deployments = append(out.Deployments, &deps.Items[i])
	}
	rss, err := c.Clientset.AppsV1().ReplicaSets(ns).List(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("list replicasets in %s: %w", ns, err)
	}
	for i := range rss.Items {
		out.ReplicaSets = append(out.ReplicaSets, &rss.Items[i])
	}
	pods, err := c.Clientset.CoreV1().Pods(ns).List(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("list pods in %s: %w", ns, err)
	}
	for i := range pods.Items {
		out.Pods = append(out.Pods, &pods.Items[i])
	}
	return out, nil
}
