package kube

import (
	"context"
	"fmt"

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
	var out []string
	for _, in := range s.Status.LoadBalancer.Ingress {
		switch {
		case in.IP != "":
			out = append(out, in.IP)
		case in.Hostname != "":
			out = append(out, in.Hostname)
		}
	}
	return out, nil
}
