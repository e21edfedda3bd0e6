package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"slipway.dev/slipway/internal/plan"
)

// Relabel sets label of object k (a Namespace or a kind slipway manages) from one value to
// another, and nothing else: the adoption of a deployment's objects under its new key (issue
// 46). It is a JSON patch whose tests make the server refuse it when the object is not the
// one judged (uid) or its label no longer says from: an object re-made or relabelled by
// someone else since is left alone. An object gone is no error.
func (c *Client) Relabel(ctx context.Context, k plan.Key, uid, label, from, to string) error {
	ri, err := c.resourceOf(k)
	if err != nil {
		return err
	}
	path := "/metadata/labels/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(label)
	ops := []map[string]string{
		{"op": "test", "path": "/metadata/uid", "value": uid},
		{"op": "test", "path": path, "value": from},
		{"op": "replace", "path": path, "value": to},
	}
	data, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	if _, err := ri.Patch(ctx, k.Name, types.JSONPatchType, data, metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("%s: relabel %s=%s to %s: %w", k, label, from, to, err)
	}
	return nil
}
