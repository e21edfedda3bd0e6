package engine

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

	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/render"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

const (
	imgA     = "r/web@sha256:a"
	imgB     = "r/web@sha256:b"
	imgCrash = "r/web@sha256:crash"
	imgHang  = "r/web@sha256:hang"
	imgSlow  = "r/web@sha256:slow"
)

// testDeployment is a Deployment of group demo running image at replicas.
func testDeployment(name, image string, replicas int32) *unstructured.Unstructured {
	labels := map[string]string{"app.kubernetes.io/name": name}
	d := &appsv1.Deployment{TypeMeta: render.DeploymentTypeMeta,
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "demo", Labels: labels},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "node", Image: image}}}}}}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(d)
	if err != nil {
		panic(err)
	}
	return &unstructured.Unstructured{Object: m}
}

func depKey(name string) plan.Key { return plan.Key{Kind: "Deployment", Namespace: "demo", Name: name} }

// templateChange is an update of a Deployment's pod template.
func templateChange(name string) plan.Change {
	return plan.Change{Key: depKey(name), Action: plan.Update, Diff: []plan.FieldDiff{{Path: "spec.template.spec.containers[0].image"}}}
}

// applyRun is one apply against the fake: node web with role worker on the node's image.
type applyRun struct {
	f      *fakeCluster
	store  *memStore
	group  *spec.Group
	events []event.Event
}

// newApplyRun starts from web and web-worker running image (when not ""), ready and recorded.
func newApplyRun(t *testing.T, image string, roles ...*spec.Role) *applyRun {
	t.Helper()
	if roles == nil {
		roles = []*spec.Role{{Name: "worker", Replicas: 1}}
	}
	r := &applyRun{f: newFakeCluster(), store: &memStore{Doc: &state.Document{Group: "demo"}},
		group: &spec.Group{Name: "demo", Nodes: []*spec.Node{{Name: "web", Roles: roles}}}}
	if image == "" {
		return r
	}
	ctx := context.Background()
	for _, u := range []*unstructured.Unstructured{testDeployment("web", image, 1), testDeployment("web-worker", image, 1)} {
		if _, err := r.f.Apply(ctx, u, applyOptions()); err != nil {
			t.Fatal(err)
		}
	}
	r.store.Doc = &state.Document{Group: "demo", Namespace: "demo", Nodes: map[string]*state.NodeState{"web": {
		MachineID: "id", Image: state.ImageRecord{Ref: "r/web", Digest: lane.DigestOf(image)},
		ReadyTemplate: lane.TemplateHash(r.f, depKey("web")), PreviousReady: image,
		LastRollout: &event.Rollout{Result: event.RolloutReady, Digest: lane.DigestOf(image)},
		Roles:       map[string]*state.RoleState{"worker": {Replicas: 1}}}}}
	r.f.ResetCalls()
	return r
}

// apply runs an apply of web at image with changes; timeout bounds every wait.
func (r *applyRun) apply(ctx context.Context, image string, roleImage string, changes ...plan.Change) error {
	p := &plan.Plan{Group: "demo", Namespace: "demo", StateSerial: r.store.Doc.Serial,
		MachineIDs: map[string]string{"web": "id"},
		Images:     []plan.Image{{Name: "web", Node: "web", Tag: "r/web:t", Digest: image}},
		Desired:    []*unstructured.Unstructured{testDeployment("web", image, 1), testDeployment("web-worker", roleImage, 1)},
		Nodes:      []plan.NodePlan{{Node: "web", Changes: changes}}}
	e := New(Options{Kube: r.f, Timeout: 300 * time.Millisecond, Emit: func(ev event.Event) { r.events = append(r.events, ev) }})
	return e.Apply(ctx, p, Target{Group: r.group, Namespace: "demo", Store: r.store})
}

func (r *applyRun) last() *event.Rollout { return r.store.Doc.Nodes["web"].LastRollout }

// The rollback decision: a failed rollout goes back to the live template when it ran ready,
// else to the ReplicaSet the state recorded as the last ready one, else nowhere. Roles stop
// before the node's template changes and start again only next to a ready node.
func TestApplyRollout(t *testing.T) {
	for _, tc := range []struct {
		name       string
		live       string // the image running before ("" none)
		brokenLive string // applied over live without becoming ready, as a killed run leaves it
		image      string
		create     bool
		wantErr    string // "" none
		wantImage  string // web's image after the apply
		wantRole   int32  // web-worker's replicas after the apply
		wantLast   string
		wantDigest string
		wantCalls  []string
	}{
		{name: "ready", live: imgA, image: imgB, wantImage: imgB, wantRole: 1, wantLast: event.RolloutReady, wantDigest: "sha256:b",
			wantCalls: []string{"scale web-worker 0", "apply Deployment web", "apply Deployment web-worker"}},
		{name: "never ready: back to the live ready template", live: imgA, image: imgHang,
			wantErr: "rolled back to sha256:a", wantImage: imgA, wantRole: 0, wantLast: event.RolloutRolledBack, wantDigest: "sha256:a",
			wantCalls: []string{"scale web-worker 0", "apply Deployment web", "apply Deployment web"}},
		{name: "crash loop: back to the live ready template", live: imgA, image: imgCrash,
			wantErr: "CrashLoopBackOff", wantImage: imgA, wantRole: 0, wantLast: event.RolloutRolledBack, wantDigest: "sha256:a",
			wantCalls: []string{"scale web-worker 0", "apply Deployment web", "apply Deployment web"}},
		{name: "live not ready: back to the recorded ready replica set", live: imgA, brokenLive: imgHang, image: imgCrash,
			wantErr: "rolled back to sha256:a", wantImage: imgA, wantRole: 0, wantLast: event.RolloutRolledBack, wantDigest: "sha256:a",
			wantCalls: []string{"scale web-worker 0", "apply Deployment web", "apply Deployment web"}},
		{name: "first deploy fails: nothing to roll back to", image: imgCrash, create: true,
			wantErr: "nothing to roll back to", wantImage: imgCrash, wantRole: -1, wantLast: event.RolloutFailed, wantDigest: "sha256:crash",
			wantCalls: []string{"apply Deployment web"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newApplyRun(t, tc.live)
			if tc.brokenLive != "" {
				if _, err := r.f.Apply(context.Background(), testDeployment("web", tc.brokenLive, 1), applyOptions()); err != nil {
					t.Fatal(err)
				}
				r.f.ResetCalls()
			}
			changes := []plan.Change{templateChange("web"), templateChange("web-worker")}
			if tc.create {
				changes = []plan.Change{{Key: depKey("web"), Action: plan.Create}, {Key: depKey("web-worker"), Action: plan.Create}}
			}
			err := r.apply(context.Background(), tc.image, tc.image, changes...)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("apply: %v, want an error with %q", err, tc.wantErr)
			}
			if got := r.f.Image("web"); got != tc.wantImage {
				t.Errorf("web runs %s, want %s", got, tc.wantImage)
			}
			if got := r.f.Replicas("web-worker"); got != tc.wantRole {
				t.Errorf("web-worker at %d replicas, want %d", got, tc.wantRole)
			}
			if l := r.last(); l == nil || l.Result != tc.wantLast || l.Digest != tc.wantDigest {
				t.Errorf("last rollout %+v, want %s of %s", l, tc.wantLast, tc.wantDigest)
			}
			if d := cmp.Diff(tc.wantCalls, r.f.Calls()); d != "" {
				t.Errorf("calls (-want +got):\n%s", d)
			}
		})
	}
}

// Role gating: a role starts only next to a ready node, and goes back to 0 when it fails; a
// service role whose template changes without a new image (its sidecarSecrets, issue 43) is
// rolled without a stop and set back to its last ready template when it fails.
func TestApplyRoles(t *testing.T) {
	svc := []*spec.Role{{Name: "worker", Replicas: 1, Service: &spec.Service{}}}
	replicasChange := plan.Change{Key: depKey("web-worker"), Action: plan.Update, Diff: []plan.FieldDiff{{Path: "spec.replicas"}}}
	// Only the sidecar's configuration changes; the fake runs the template's image (the
	// role's new template fails or not by the image given).
	sidecarChange := plan.Change{Key: depKey("web-worker"), Action: plan.Update, Diff: []plan.FieldDiff{{Path: "spec.template.spec.initContainers[0].env[0].value"}}}
	for _, tc := range []struct {
		name      string
		live      string
		roles     []*spec.Role
		roleImage string
		change    plan.Change
		wantErr   string
		wantRole  int32
		wantImage string // web-worker's image after the apply; "" not checked
		wantCalls []string
	}{
		{name: "service role without a new image: rolled without a stop", live: imgA, roles: svc, roleImage: imgB, change: sidecarChange,
			wantRole: 1, wantImage: imgB, wantCalls: []string{"apply Deployment web-worker"}},
		{name: "service role without a new image fails: set back, stays up", live: imgA, roles: svc, roleImage: imgCrash, change: sidecarChange,
			wantErr: "role worker did not become ready (CrashLoopBackOff", wantRole: 1, wantImage: imgA,
			wantCalls: []string{"apply Deployment web-worker", "apply Deployment web-worker"}},
		{name: "service role without a new image, not ready before: back to 0", live: imgA, roles: svc, roleImage: imgCrash, change: sidecarChange,
			wantErr: "it is back at 0 replicas", wantRole: 0,
			wantCalls: []string{"apply Deployment web-worker", "scale web-worker 0"}},
		{name: "role changes next to a ready node", live: imgA, roleImage: imgA, change: replicasChange, wantRole: 1,
			wantCalls: []string{"apply Deployment web-worker"}},
		{name: "node not ready: the role is not started", live: imgHang, roleImage: imgHang, change: replicasChange,
			wantErr: "its roles stay stopped", wantRole: 1, wantCalls: nil},
		{name: "service role fails: back to 0", live: imgA, roles: svc, roleImage: imgCrash, change: templateChange("web-worker"),
			wantErr: "role worker did not become ready", wantRole: 0,
			wantCalls: []string{"scale web-worker 0", "apply Deployment web-worker", "scale web-worker 0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newApplyRun(t, tc.live, tc.roles...)
			if strings.Contains(tc.name, "not ready before") {
				// An earlier run left the role on a template that never became ready.
				if _, err := r.f.Apply(context.Background(), testDeployment("web-worker", imgHang, 1), applyOptions()); err != nil {
					t.Fatal(err)
				}
				r.f.ResetCalls()
			}
			err := r.apply(context.Background(), tc.live, tc.roleImage, tc.change)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("apply: %v, want an error with %q", err, tc.wantErr)
			}
			if got := r.f.Replicas("web-worker"); got != tc.wantRole {
				t.Errorf("web-worker at %d replicas, want %d", got, tc.wantRole)
			}
			if got := r.f.Image("web-worker"); tc.wantImage != "" && got != tc.wantImage {
				t.Errorf("web-worker runs %s, want %s", got, tc.wantImage)
			}
			if d := cmp.Diff(tc.wantCalls, r.f.Calls()); d != "" {
				t.Errorf("calls (-want +got):\n%s", d)
			}
		})
	}
}

// A run killed between steps (here: once the Deployment changed, while its pods are not ready)
// leaves the rollout recorded in flight and its roles stopped; the next run, planned as plan
// plans a rollout in flight, follows it and starts the roles.
func TestApplyKilledBetweenSteps(t *testing.T) {
	r := newApplyRun(t, imgA)
	frozen := r.f.KillAt("apply Deployment web")
	go r.apply(context.Background(), imgSlow, imgSlow, templateChange("web"), templateChange("web-worker")) //nolint:errcheck // killed: it never returns
	<-frozen
	if l := r.last(); l == nil || l.Result != event.RolloutInProgress || l.Digest != "sha256:slow" {
		t.Fatalf("after the kill, last rollout %+v: want in flight of sha256:slow", l)
	}
	if ns := r.store.Doc.Nodes["web"]; ns.PreviousReady != imgA {
		t.Errorf("after the kill, previous ready %q, want %s", ns.PreviousReady, imgA)
	}
	if got := r.f.Replicas("web-worker"); got != 0 {
		t.Errorf("after the kill, web-worker at %d replicas, want 0", got)
	}

	r.f.Release()
	r.f.ResetCalls()
	follow := plan.Change{Key: depKey("web"), Action: plan.Update, Reason: plan.InterruptedReason}
	replicas := plan.Change{Key: depKey("web-worker"), Action: plan.Update, Diff: []plan.FieldDiff{{Path: "spec.replicas"}}}
	if err := r.apply(context.Background(), imgSlow, imgSlow, follow, replicas); err != nil {
		t.Fatalf("next apply: %v", err)
	}
	if l := r.last(); l == nil || l.Result != event.RolloutReady || l.Digest != "sha256:slow" {
		t.Errorf("after the next apply, last rollout %+v: want ready of sha256:slow", l)
	}
	if got := r.f.Replicas("web-worker"); got != 1 {
		t.Errorf("after the next apply, web-worker at %d replicas, want 1", got)
	}
}

// Objects that left a node go after its roles started, Deployments before Services; a node
// that left the group goes after every node of the file, and its state with it.
func TestApplyPrunes(t *testing.T) {
	r := newApplyRun(t, imgA)
	ctx := context.Background()
	for _, name := range []string{"web-old", "db"} {
		if _, err := r.f.Apply(ctx, testDeployment(name, imgA, 1), applyOptions()); err != nil {
			t.Fatal(err)
		}
	}
	r.store.Doc.Nodes["db"] = &state.NodeState{MachineID: "db"}
	r.f.ResetCalls()
	svc := plan.Key{Kind: "Service", Namespace: "demo", Name: "web-old"}
	p := &plan.Plan{Group: "demo", Namespace: "demo", StateSerial: r.store.Doc.Serial,
		MachineIDs: map[string]string{"web": "id"},
		Desired:    []*unstructured.Unstructured{testDeployment("web", imgA, 1), testDeployment("web-worker", imgA, 1)},
		Nodes: []plan.NodePlan{
			{Node: "web", Changes: []plan.Change{{Key: svc, Action: plan.Delete}, {Key: depKey("web-old"), Action: plan.Delete}}},
			{Node: "db", Changes: []plan.Change{{Key: depKey("db"), Action: plan.Delete}}, Removed: true}}}
	e := New(Options{Kube: r.f, Timeout: 300 * time.Millisecond})
	if err := e.Apply(ctx, p, Target{Group: r.group, Namespace: "demo", Store: r.store}); err != nil {
		t.Fatalf("apply: %v", err)
	}
	want := []string{"delete Deployment web-old", "delete Service web-old", "delete Deployment db"}
	if d := cmp.Diff(want, r.f.Calls()); d != "" {
		t.Errorf("calls (-want +got):\n%s", d)
	}
	if _, ok := r.store.Doc.Nodes["db"]; ok {
		t.Error("the state still holds node db, which left the group")
	}
}
