package render_test

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slipway.dev/slipway/internal/render"
	"slipway.dev/slipway/internal/spec"
)

// The applied hash is the object's without itself: stamping again keeps it, a dropped field
// changes it, and it goes on the object's own metadata, never on the pod template.
func TestStampApplied(t *testing.T) {
	placed := func(tolerations []corev1.Toleration) *appsv1.Deployment {
		d := &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "demo", Annotations: map[string]string{"a": "b"}}}
		d.Spec.Template.Spec.Tolerations = tolerations
		if err := render.StampApplied(d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	with := placed([]corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}})
	h := with.Annotations[spec.AnnotationAppliedHash]
	for _, tc := range []struct {
		name string
		d    *appsv1.Deployment
		same bool
	}{
		{"stamped again", func() *appsv1.Deployment {
			d := with.DeepCopy()
			if err := render.StampApplied(d); err != nil {
				t.Fatal(err)
			}
			return d
		}(), true},
		{"the same object", placed([]corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}), true},
		{"tolerations dropped", placed(nil), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.d.Annotations[spec.AnnotationAppliedHash]
			if len(got) != 16 || (got == h) != tc.same {
				t.Errorf("applied hash %q, first object's %q: want the same %v", got, h, tc.same)
			}
			if tc.d.Annotations["a"] != "b" || tc.d.Spec.Template.Annotations != nil {
				t.Errorf("annotations %v, pod template's %v", tc.d.Annotations, tc.d.Spec.Template.Annotations)
			}
		})
	}
}
