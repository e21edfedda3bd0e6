package roles

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"slipway.dev/slipway/internal/engine/enginetest"
	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/render"
)

var _ Cluster = (*enginetest.Cluster)(nil) // the stand-in the lane's tests use

// role is role worker of node web as render makes it: Deployment web-worker at replicas.
func role(t *testing.T, image string, replicas int32) *unstructured.Unstructured {
	t.Helper()
	labels := map[string]string{"app.kubernetes.io/name": "web-worker"}
	d := &appsv1.Deployment{TypeMeta: render.DeploymentTypeMeta,
		ObjectMeta: metav1.ObjectMeta{Name: "web-worker", Namespace: "demo", Labels: labels},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: render.ContainerService, Image: image}}}}}}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(d)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

// TestStartAndStopRole: the lane's steps against the shared stand-in: a role that becomes
// ready stays up; one that does not goes back to 0 and says so; stop-role takes it to 0.
func TestStartAndStopRole(t *testing.T) {
	lane.WaitTick = 10 * time.Millisecond
	k := plan.Key{Kind: "Deployment", Namespace: "demo", Name: "web-worker"}
	for _, tc := range []struct {
		name      string
		image     string
		kind      plan.StepKind
		wantErr   string
		wantCalls []string
		wantRepl  int32
	}{
		{name: "start: ready", image: "r/web@sha256:a", kind: plan.StepStartRole,
			wantCalls: []string{"apply Deployment web-worker"}, wantRepl: 2},
		{name: "start: never ready, back to 0", image: "r/web@sha256:hang", kind: plan.StepStartRole,
			wantErr: "it is back at 0 replicas", wantCalls: []string{"apply Deployment web-worker", "scale web-worker 0"}, wantRepl: 0},
		{name: "stop", image: "r/web@sha256:a", kind: plan.StepStopRole,
			wantCalls: []string{"scale web-worker 0"}, wantRepl: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := enginetest.NewCluster()
			if tc.kind == plan.StepStopRole {
				if _, err := f.Apply(context.Background(), role(t, tc.image, 2), enginetest.ApplyOptions()); err != nil {
					t.Fatal(err)
				}
				f.ResetCalls()
			}
			env := lane.Env{Emit: func(event.Event) {}, PodLogTail: f.PodLogTail,
				Apply: func(ctx context.Context, obj runtime.Object) (int64, error) {
					out, err := f.Apply(ctx, obj, kube.ApplyOptions{Force: true})
					if err != nil {
						return 0, err
					}
					return out.GetGeneration(), nil
				}}
			obj := role(t, tc.image, 2)
			nr := &lane.NodeRun{Plan: &plan.Plan{Namespace: "demo"}, Watch: f,
				Object: func(plan.Key) *unstructured.Unstructured { return obj }}
			st := plan.Step{Kind: tc.kind, Node: "web", Role: "worker", Object: &k, Replicas: 2, Limit: 300 * time.Millisecond}
			err := New(env, f).Executors()[tc.kind](context.Background(), nr, st)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("%s: %v, want an error with %q", tc.kind, err, tc.wantErr)
			}
			if d := cmp.Diff(tc.wantCalls, f.Calls()); d != "" {
				t.Errorf("calls (-want +got):\n%s", d)
			}
			if got := f.Replicas("web-worker"); got != tc.wantRepl {
				t.Errorf("replicas %d, want %d", got, tc.wantRepl)
			}
		})
	}
}
