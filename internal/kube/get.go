package kube

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"slipway.dev/slipway/internal/plan"
)

// Get reads the object k whole, a Secret's values included (nil when it does not exist):
// what a rollback puts back of a node's config (issue 35 item 4). The caller keeps it in
// memory only.
func (c *Client) Get(ctx context.Context, k plan.Key) (*unstructured.Unstructured, error) {
	ri, err := c.resourceOf(k)
	if err != nil {
		return nil, err
	}
	u, err := ri.Get(ctx, k.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return u, err
}
