package kube

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ServesKind reports whether the API server serves gvk now (a CRD installed and established),
// asking discovery afresh: the client's REST mapper keeps what it read first.
func (c *Client) ServesKind(ctx context.Context, gvk schema.GroupVersionKind) (bool, error) {
	gv := gvk.GroupVersion().String()
	list, err := c.Clientset.Discovery().ServerResourcesForGroupVersion(gv)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("cluster %s: discovery of %s: %w", c.Config.Host, gv, err)
	}
	for _, r := range list.APIResources {
		if r.Kind == gvk.Kind {
			return true, nil
		}
	}
	return false, nil
}
