package kube

import (
	"context"
	"fmt"

	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// defaultClassAnnotation marks the cluster's default StorageClass.
const defaultClassAnnotation = "storageclass.kubernetes.io/is-default-class"

// ClaimsBindImmediately reports whether a claim of StorageClass name ("": the cluster's
// default) is bound as soon as it is made (volumeBindingMode Immediate), rather than once a pod
// that uses it is scheduled. False when the class, or a default, does not exist.
func (c *Client) ClaimsBindImmediately(ctx context.Context, name string) (bool, error) {
	api := c.Clientset.StorageV1().StorageClasses()
	var sc *storagev1.StorageClass
	if name != "" {
		got, err := api.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("storage class %s: %w", name, err)
		}
		sc = got
	} else {
		list, err := api.List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, fmt.Errorf("storage classes: %w", err)
		}
		for i := range list.Items {
			if list.Items[i].Annotations[defaultClassAnnotation] == "true" {
				sc = &list.Items[i]
			}
		}
		if sc == nil {
			return false, nil
		}
	}
	return sc.VolumeBindingMode == nil || *sc.VolumeBindingMode == storagev1.VolumeBindingImmediate, nil
}
