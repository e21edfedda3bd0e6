package kube

// What the tests of e2e/kube, which need the dev cluster, reach of kube's insides: nothing
// else in slipway uses these.

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// OptionalKinds lets the tests mark a kind as one a cluster may lack.
var OptionalKinds = optionalKinds

// ListBothWays lists gvk in ns as the plan does (protobuf for a built-in kind) and as JSON.
func (c *Client) ListBothWays(ctx context.Context, gvk schema.GroupVersionKind, ns string) (asPlan, asJSON []*unstructured.Unstructured, err error) {
	if asPlan, err = c.listRaw(ctx, gvk, ns, ""); err != nil {
		return nil, nil, err
	}
	req, err := c.listRequest(gvk, ns, "")
	if err != nil {
		return nil, nil, err
	}
	asJSON, err = listJSON(ctx, req, gvk)
	return asPlan, asJSON, err
}

// IsBuiltIn reports whether gvk is listed as protobuf.
func IsBuiltIn(gvk schema.GroupVersionKind) bool { _, ok := typedList(gvk); return ok }
