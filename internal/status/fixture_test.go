package status_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"slipway.dev/slipway/internal/status"
)

// load reads a multi-document YAML file of objects as the API server returns them into an
// Input; Now, Since and Limit are the caller's.
func load(t *testing.T, name string) status.Input {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var in status.Input
	for i, doc := range bytes.Split(data, []byte("\n---\n")) {
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			t.Fatalf("%s: document %d: %v", name, i, err)
		}
		var obj any
		switch tm.Kind {
		case "Deployment":
			in.Deployment = &appsv1.Deployment{}
			obj = in.Deployment
		case "ReplicaSet":
			rs := &appsv1.ReplicaSet{}
			in.ReplicaSets, obj = append(in.ReplicaSets, rs), rs
		case "Pod":
			p := &corev1.Pod{}
			in.Pods, obj = append(in.Pods, p), p
		case "Event":
			e := &corev1.Event{}
			in.Events, obj = append(in.Events, e), e
		default:
			t.Fatalf("%s: document %d: unexpected kind %q", name, i, tm.Kind)
		}
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			t.Fatalf("%s: document %d: %v", name, i, err)
		}
	}
	return in
}

func TestFixtures(t *testing.T) {
	const pulled = "registry.test:5000/demo/web@sha256:3333333333333333333333333333333333333333333333333333333333333333"
	tests := []struct {
		file       string
		now        time.Duration // after the apply at 12:00:00
		want       status.Result
		wantEvents []status.EventGroup
	}{
		{
			file: "crashloop.yaml",
			now:  8 * time.Second,
			want: status.Result{
				Phase: status.Failed, Reason: "CrashLoopBackOff", Pod: "web-5d8f7b9c4-qx2lm",
				Message: "pod web-5d8f7b9c4-qx2lm: container node: back-off restarting failed container (restarts 4, last exit code 1)",
				Desired: 1, Updated: 1,
			},
			// The Deployment's events name another ReplicaSet: they are labelled as the
			// Deployment's, not listed as the pod's.
			wantEvents: []status.EventGroup{
				{Object: "deployment web", Lines: []string{
					"ScalingReplicaSet: Scaled down replica set web-6b7c8d9f5 from 1 to 0",
					"ScalingReplicaSet: Scaled up replica set web-5d8f7b9c4 from 0 to 1",
				}},
				{Object: "replica set web-5d8f7b9c4", Lines: []string{"SuccessfulCreate: Created pod: web-5d8f7b9c4-qx2lm"}},
				{Object: "pod web-5d8f7b9c4-qx2lm", Lines: []string{"Scheduled: Successfully assigned demo/web-5d8f7b9c4-qx2lm to kwok-node-0"}},
			},
		},
		{
			file: "pull-error.yaml",
			now:  6 * time.Second,
			want: status.Result{
				Phase: status.Progressing, Reason: "ImagePullBackOff", Pod: "web-7f9d6c5b8-m4n7p",
				Message: `pod web-7f9d6c5b8-m4n7p: container node: cannot pull image "` + pulled + `" (ImagePullBackOff): Back-off pulling image "` + pulled + `"`,
				Desired: 1, Updated: 1,
			},
		},
		{
			file: "pull-error.yaml",
			now:  12 * time.Second,
			want: status.Result{
				Phase: status.Failed, Reason: "ImagePullBackOff", Pod: "web-7f9d6c5b8-m4n7p",
				Message: `pod web-7f9d6c5b8-m4n7p: container node: cannot pull image "` + pulled + `" (ImagePullBackOff): Back-off pulling image "` + pulled + `"`,
				Desired: 1, Updated: 1,
			},
			wantEvents: []status.EventGroup{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file+"@"+tt.now.String(), func(t *testing.T) {
			in := load(t, tt.file)
			in.Since, in.Now, in.Limit = t0, t0.Add(tt.now), 5*time.Minute
			got := status.Rollout(in)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Rollout (-want +got):\n%s", diff)
			}
			if tt.wantEvents != nil {
				if diff := cmp.Diff(tt.wantEvents, status.Events(in, got.Pod, 5)); diff != "" {
					t.Errorf("Events (-want +got):\n%s", diff)
				}
			}
		})
	}
}
