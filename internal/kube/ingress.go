package kube

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ServiceIngress returns the addresses a LoadBalancer Service was given (its
// status.loadBalancer.ingress: IPs, or host names), none while it has none or does not exist.
func (c *Client) ServiceIngress(ctx context.Context, ns, name string) ([]string, error) {
	s, err := c.Clientset.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("service %s/%s: %w", ns, name, err)
	}
	return IngressOf(s), nil
}

// IngressOf is the ingress addresses of a LoadBalancer Service: its IPs, or host names.
func IngressOf(s *corev1.Service) []string {
	if s.Spec.Type != corev1.ServiceTypeLoadBalancer {
		return nil
	}
	var out []string
	for _, in := range s.Status.LoadBalancer.Ingress {
		switch {
		case in.IP != "":
			out = append(out, in.IP)
		case in.Hostname != "":
			out = append(out, in.Hostname)
		}
	}
	return out
}
