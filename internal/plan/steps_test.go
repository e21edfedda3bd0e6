package plan

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"slipway.dev/slipway/internal/spec"
)

// stepsGroup is node web with a role on its image (worker, 2 replicas) and a service role
// (sso, its own image), and node db without roles.
func stepsGroup() *spec.Group {
	return &spec.Group{Name: "demo", Nodes: []*spec.Node{
		{Name: "db", RolloutTimeout: 2 * time.Minute},
		{Name: "web", Roles: []*spec.Role{
			{Name: "sso", Replicas: 1, Service: &spec.Service{}},
			{Name: "worker", Replicas: 2},
		}},
	}}
}

func stepsLimit(n *spec.Node) time.Duration {
	if n.RolloutTimeout > 0 {
		return n.RolloutTimeout
	}
	return 5 * time.Minute
}

func TestBuildSteps(t *testing.T) {
	k := func(kind, name string) Key { return Key{Kind: kind, Namespace: "demo", Name: name} }
	kp := func(kind, name string) *Key { key := k(kind, name); return &key }
	dep := func(name string) *Key { return kp("Deployment", name) }
	imageDiff := []FieldDiff{{Path: "spec.template.spec.containers[0].image", Old: "r/web@sha256:a", New: "r/web@sha256:b"}}
	envDiff := []FieldDiff{{Path: "spec.template.spec.containers[0].env[1].value", Old: "1", New: "2"}}
	sidecarDiff := []FieldDiff{{Path: "spec.template.spec.initContainers[0].env[0].value", Old: `{"files":[…a…]}`, New: `{"files":[…b…]}`}}
	webImage := Image{Name: "web", Node: "web", Tag: "r/web:c-2", Digest: "r/web@sha256:b", Push: true}
	ssoImage := Image{Name: "web-sso", Node: "web", Tag: "r/web-sso:c-2", Digest: "r/web-sso@sha256:d", Push: true}
	unchanged := func(nodes ...NodeSteps) []NodeSteps {
		out := []NodeSteps{{Node: "db"}, {Node: "web"}}
		for _, ns := range nodes {
			for i := range out {
				if out[i].Node == ns.Node {
					out[i] = ns
				}
			}
		}
		return out
	}
	awaitWeb := Step{Kind: StepAwaitRollout, Node: "web", Object: dep("web"), Replicas: 1, Limit: 5 * time.Minute, Rollback: RollbackLastReady}

	tests := []struct {
		name string
		plan *Plan
		want *Steps
	}{
		{
			name: "image change with roles",
			plan: &Plan{Namespace: "demo", Images: []Image{webImage}, Nodes: []NodePlan{{Node: "web", Changes: []Change{
				{Key: k("Deployment", "web"), Action: Update, Diff: imageDiff},
				{Key: k("Deployment", "web-worker"), Action: Update, Diff: imageDiff},
			}}}},
			// The worker runs the node's image: it stops first and starts after the
			// rollout; sso runs its own image and keeps running.
			want: &Steps{Nodes: unchanged(NodeSteps{Node: "web", Steps: []Step{
				{Kind: StepPush, Node: "web", ImageName: "web", Image: "r/web:c-2"},
				{Kind: StepStopRole, Node: "web", Role: "worker", Object: dep("web-worker")},
				{Kind: StepApplyDeployment, Node: "web", Object: dep("web"), Action: Update},
				awaitWeb,
				{Kind: StepStartRole, Node: "web", Role: "worker", Object: dep("web-worker"), Action: Update, Replicas: 2, Limit: 5 * time.Minute},
			}})},
		},
		{
			name: "role on the node's image unchanged still stops",
			plan: &Plan{Namespace: "demo", Nodes: []NodePlan{{Node: "web", Changes: []Change{
				{Key: k("Deployment", "web"), Action: Update, Diff: imageDiff},
			}}}},
			want: &Steps{Nodes: unchanged(NodeSteps{Node: "web", Steps: []Step{
				{Kind: StepStopRole, Node: "web", Role: "worker", Object: dep("web-worker")},
				{Kind: StepApplyDeployment, Node: "web", Object: dep("web"), Action: Update},
				awaitWeb,
				{Kind: StepStartRole, Node: "web", Role: "worker", Object: dep("web-worker"), Replicas: 2, Limit: 5 * time.Minute},
			}})},
		},
		{
			name: "role added with an image change",
			plan: &Plan{Namespace: "demo", Nodes: []NodePlan{{Node: "web", Changes: []Change{
				{Key: k("Deployment", "web"), Action: Update, Diff: imageDiff},
				{Key: k("Deployment", "web-worker"), Action: Create},
			}}}},
			// A role created in this run has nothing running to stop.
			want: &Steps{Nodes: unchanged(NodeSteps{Node: "web", Steps: []Step{
				{Kind: StepApplyDeployment, Node: "web", Object: dep("web"), Action: Update},
				awaitWeb,
				{Kind: StepStartRole, Node: "web", Role: "worker", Object: dep("web-worker"), Action: Create, Replicas: 2, Limit: 5 * time.Minute},
			}})},
		},
		{
			name: "service-role change",
			plan: &Plan{Namespace: "demo", Images: []Image{ssoImage}, Nodes: []NodePlan{{Node: "web", Changes: []Change{
				{Key: k("Deployment", "web-sso"), Action: Update, Diff: imageDiff},
			}}}},
			// No rollout of the node in this run: its readiness is awaited before sso starts.
			want: &Steps{Nodes: unchanged(NodeSteps{Node: "web", Steps: []Step{
				{Kind: StepPush, Node: "web", ImageName: "web-sso", Image: "r/web-sso:c-2"},
				{Kind: StepStopRole, Node: "web", Role: "sso", Object: dep("web-sso")},
				{Kind: StepAwaitReady, Node: "web", Object: dep("web"), Replicas: 1, Limit: 5 * time.Minute},
				{Kind: StepStartRole, Node: "web", Role: "sso", Object: dep("web-sso"), Action: Update, Replicas: 1, Limit: 5 * time.Minute},
			}})},
		},
		{
			// Issue 43 item 6: only the role's sidecarSecrets change (the sidecar's config in
			// its env), no image: the role rolls while it runs, and a failure sets it back.
			name: "service-role change without an image",
			plan: &Plan{Namespace: "demo", Nodes: []NodePlan{{Node: "web", Changes: []Change{
				{Key: k("Deployment", "web-sso"), Action: Update, Diff: sidecarDiff},
			}}}},
			want: &Steps{Nodes: unchanged(NodeSteps{Node: "web", Steps: []Step{
				{Kind: StepAwaitReady, Node: "web", Object: dep("web"), Replicas: 1, Limit: 5 * time.Minute},
				{Kind: StepStartRole, Node: "web", Role: "sso", Object: dep("web-sso"), Action: Update, Replicas: 1, Limit: 5 * time.Minute, Rollback: RollbackLastReady},
			}})},
		},
		{
			name: "service-role change without an image while the node's image changes",
			plan: &Plan{Namespace: "demo", Images: []Image{webImage}, Nodes: []NodePlan{{Node: "web", Changes: []Change{
				{Key: k("Deployment", "web"), Action: Update, Diff: imageDiff},
				{Key: k("Deployment", "web-sso"), Action: Update, Diff: sidecarDiff},
				{Key: k("Deployment", "web-worker"), Action: Update, Diff: imageDiff},
			}}}},
			// The seed's rule stays for a new image of the node: sso stops too.
			want: &Steps{Nodes: unchanged(NodeSteps{Node: "web", Steps: []Step{
				{Kind: StepPush, Node: "web", ImageName: "web", Image: "r/web:c-2"},
				{Kind: StepStopRole, Node: "web", Role: "sso", Object: dep("web-sso")},
				{Kind: StepStopRole, Node: "web", Role: "worker", Object: dep("web-worker")},
				{Kind: StepApplyDeployment, Node: "web", Object: dep("web"), Action: Update},
				awaitWeb,
				{Kind: StepStartRole, Node: "web", Role: "sso", Object: dep("web-sso"), Action: Update, Replicas: 1, Limit: 5 * time.Minute},
				{Kind: StepStartRole, Node: "web", Role: "worker", Object: dep("web-worker"), Action: Update, Replicas: 2, Limit: 5 * time.Minute},
			}})},
		},
		{
			name: "service role gets a companion",
			plan: &Plan{Namespace: "demo", Nodes: []NodePlan{{Node: "web", Changes: []Change{
				{Key: k("Deployment", "web-sso"), Action: Update, Diff: append(sidecarDiff,
					FieldDiff{Path: "spec.template.spec.containers[1].image", New: "r/web-sso@sha256:d"})},
			}}}},
			// A container added is a new image in the pod: stopped as for the service's own.
			want: &Steps{Nodes: unchanged(NodeSteps{Node: "web", Steps: []Step{
				{Kind: StepStopRole, Node: "web", Role: "sso", Object: dep("web-sso")},
				{Kind: StepAwaitReady, Node: "web", Object: dep("web"), Replicas: 1, Limit: 5 * time.Minute},
				{Kind: StepStartRole, Node: "web", Role: "sso", Object: dep("web-sso"), Action: Update, Replicas: 1, Limit: 5 * time.Minute},
			}})},
		},
		{
			name: "config-only change",
			plan: &Plan{Namespace: "demo", Nodes: []NodePlan{{Node: "web", Changes: []Change{
				{Key: k("Service", "web"), Action: Update, Diff: []FieldDiff{{Path: "spec.ports[0].port", Old: "80", New: "8080"}}},
				{Key: k("Deployment", "web"), Action: Update, Diff: envDiff},
				{Key: k("Deployment", "web-worker"), Action: Update, Diff: envDiff},
			}}}},
			// An env change is a change of the pod template: the worker stops as for an image.
			want: &Steps{Nodes: unchanged(NodeSteps{Node: "web", Steps: []Step{
				{Kind: StepApplyObjects, Node: "web", Objects: []Key{k("Service", "web")}},
				{Kind: StepStopRole, Node: "web", Role: "worker", Object: dep("web-worker")},
				{Kind: StepApplyDeployment, Node: "web", Object: dep("web"), Action: Update},
				awaitWeb,
				{Kind: StepStartRole, Node: "web", Role: "worker", Object: dep("web-worker"), Action: Update, Replicas: 2, Limit: 5 * time.Minute},
			}})},
		},
		{
			name: "change outside the pod template",
			plan: &Plan{Namespace: "demo", Nodes: []NodePlan{{Node: "web", Changes: []Change{
				{Key: k("Deployment", "web"), Action: Update, Diff: []FieldDiff{{Path: "metadata.labels.team", New: "a"}}},
			}}}},
			want: &Steps{Nodes: unchanged(NodeSteps{Node: "web", Steps: []Step{
				{Kind: StepApplyDeployment, Node: "web", Object: dep("web"), Action: Update},
				awaitWeb,
			}})},
		},
		{
			name: "first deploy",
			plan: &Plan{Namespace: "demo", Images: []Image{webImage, ssoImage}, Nodes: []NodePlan{
				{Node: "", Changes: []Change{
					{Key: Key{Kind: "Namespace", Name: "demo"}, Action: Create},
					{Key: k("NetworkPolicy", "default-deny"), Action: Create},
				}},
				{Node: "db", Changes: []Change{
					{Key: k("PersistentVolumeClaim", "db-state"), Action: Create},
					{Key: k("Deployment", "db"), Action: Create},
				}},
				{Node: "web", Changes: []Change{
					{Key: k("NetworkPolicy", "web"), Action: Create},
					{Key: k("ServiceAccount", "web"), Action: Create},
					{Key: k("Deployment", "web"), Action: Create},
					{Key: k("Deployment", "web-sso"), Action: Create},
					{Key: k("Deployment", "web-worker"), Action: Create},
				}},
			}},
			want: &Steps{
				Before: []Step{{Kind: StepApplyObjects, Objects: []Key{{Kind: "Namespace", Name: "demo"}, k("NetworkPolicy", "default-deny")}}},
				Nodes: []NodeSteps{
					{Node: "db", Steps: []Step{
						{Kind: StepApplyObjects, Node: "db", Objects: []Key{k("PersistentVolumeClaim", "db-state")}},
						{Kind: StepAwaitClaim, Node: "db", Object: &Key{Kind: "PersistentVolumeClaim", Namespace: "demo", Name: "db-state"}, Limit: ClaimLimit},
						{Kind: StepApplyDeployment, Node: "db", Object: dep("db"), Action: Create},
						{Kind: StepAwaitRollout, Node: "db", Object: dep("db"), Replicas: 1, Limit: 2 * time.Minute, Rollback: RollbackNone},
					}},
					{Node: "web", Steps: []Step{
						{Kind: StepPush, Node: "web", ImageName: "web", Image: "r/web:c-2"},
						{Kind: StepPush, Node: "web", ImageName: "web-sso", Image: "r/web-sso:c-2"},
						{Kind: StepApplyObjects, Node: "web", Objects: []Key{k("NetworkPolicy", "web"), k("ServiceAccount", "web")}},
						{Kind: StepApplyDeployment, Node: "web", Object: dep("web"), Action: Create},
						{Kind: StepAwaitRollout, Node: "web", Object: dep("web"), Replicas: 1, Limit: 5 * time.Minute, Rollback: RollbackNone},
						{Kind: StepStartRole, Node: "web", Role: "sso", Object: dep("web-sso"), Action: Create, Replicas: 1, Limit: 5 * time.Minute},
						{Kind: StepStartRole, Node: "web", Role: "worker", Object: dep("web-worker"), Action: Create, Replicas: 2, Limit: 5 * time.Minute},
					}},
				},
			},
		},
		{
			name: "removed node",
			plan: &Plan{Namespace: "demo", Nodes: []NodePlan{{Node: "old", Removed: true, Changes: []Change{
				{Key: k("Deployment", "old"), Action: Delete},
				{Key: k("PersistentVolumeClaim", "old-state"), Action: Delete, Destructive: true},
			}}}},
			want: &Steps{Nodes: unchanged(), After: []Step{
				{Kind: StepRemoveNode, Node: "old", Objects: []Key{k("Deployment", "old"), k("PersistentVolumeClaim", "old-state")}},
			}},
		},
		{
			// spire: removed from the file: its account and ConfigMap go once the nodes are done,
			// or every later plan would list them again (issue 43 item 9).
			name: "group object no longer wanted",
			plan: &Plan{Namespace: "demo", Nodes: []NodePlan{{Node: "", Changes: []Change{
				{Key: k("ServiceAccount", "spire-server"), Action: Delete},
				{Key: k("ConfigMap", "spire-agent"), Action: Delete},
			}}}},
			want: &Steps{Nodes: unchanged(), After: []Step{
				{Kind: StepPrune, Objects: []Key{k("ServiceAccount", "spire-server"), k("ConfigMap", "spire-agent")}},
			}},
		},
		{
			name: "role removed from a node",
			plan: &Plan{Namespace: "demo", Nodes: []NodePlan{{Node: "db", Changes: []Change{
				{Key: k("Deployment", "db-cron"), Action: Delete},
				{Key: k("Service", "db-cron"), Action: Delete},
			}}}},
			want: &Steps{Nodes: unchanged(NodeSteps{Node: "db", Steps: []Step{
				{Kind: StepPrune, Node: "db", Objects: []Key{k("Deployment", "db-cron"), k("Service", "db-cron")}},
			}})},
		},
		{
			name: "suspended group",
			plan: &Plan{Namespace: "demo", Suspended: true, Images: []Image{webImage}, Nodes: []NodePlan{{Node: "web", Changes: []Change{
				{Key: k("Deployment", "web"), Action: Update, Diff: imageDiff},
				{Key: k("Deployment", "web-worker"), Action: Update, Diff: imageDiff},
			}}}},
			// Everything is applied at 0 replicas: resume starts it.
			want: &Steps{Nodes: unchanged(NodeSteps{Node: "web", Steps: []Step{
				{Kind: StepPush, Node: "web", ImageName: "web", Image: "r/web:c-2"},
				{Kind: StepStopRole, Node: "web", Role: "worker", Object: dep("web-worker")},
				{Kind: StepApplyDeployment, Node: "web", Object: dep("web"), Action: Update},
				{Kind: StepAwaitRollout, Node: "web", Object: dep("web"), Replicas: 0, Limit: 5 * time.Minute, Rollback: RollbackLastReady},
				{Kind: StepStartRole, Node: "web", Role: "worker", Object: dep("web-worker"), Action: Update, Replicas: 0, Limit: 5 * time.Minute},
			}})},
		},
		{
			name: "last rollout failed: followed again",
			plan: &Plan{Namespace: "demo", Nodes: []NodePlan{{Node: "db", Changes: []Change{
				{Key: k("Deployment", "db"), Action: Update, Reason: "its last rollout failed (NotReady): apply tries it again"},
			}}}},
			want: &Steps{Nodes: unchanged(NodeSteps{Node: "db", Steps: []Step{
				{Kind: StepApplyDeployment, Node: "db", Object: dep("db"), Action: Update},
				{Kind: StepAwaitRollout, Node: "db", Object: dep("db"), Replicas: 1, Limit: 2 * time.Minute, Rollback: RollbackLastReady},
			}})},
		},
		{
			name: "conflict: apply refuses before any change",
			plan: &Plan{Namespace: "demo", Images: []Image{webImage}, Nodes: []NodePlan{
				{Node: "db", Changes: []Change{{Key: k("Deployment", "db"), Action: Update, Diff: envDiff}}},
				{Node: "web", Changes: []Change{{Key: k("Service", "web"), Action: Conflict, Reason: "Service demo/web: not made by slipway"}}},
			}},
			want: &Steps{Nodes: unchanged()},
		},
		{
			name: "object being deleted: its node is not rolled out",
			plan: &Plan{Namespace: "demo", Images: []Image{webImage}, Nodes: []NodePlan{
				{Node: "db", Changes: []Change{{Key: k("Deployment", "db"), Action: Update, Diff: envDiff}}},
				{Node: "web", Changes: []Change{
					{Key: k("PersistentVolumeClaim", "web-state"), Action: Terminating, Reason: "being deleted"},
					{Key: k("Deployment", "web"), Action: Update, Diff: imageDiff},
				}},
			}},
			want: &Steps{Nodes: unchanged(NodeSteps{Node: "db", Steps: []Step{
				{Kind: StepApplyDeployment, Node: "db", Object: dep("db"), Action: Update},
				{Kind: StepAwaitRollout, Node: "db", Object: dep("db"), Replicas: 1, Limit: 2 * time.Minute, Rollback: RollbackLastReady},
			}})},
		},
		{
			name: "nothing to do",
			plan: &Plan{Namespace: "demo", Images: []Image{{Name: "web", Node: "web", Tag: "r/web:c-1", Digest: "r/web@sha256:a"}},
				Nodes: []NodePlan{{Node: ""}, {Node: "db"}, {Node: "web"}}},
			want: &Steps{Nodes: unchanged()},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := BuildSteps(tt.plan, stepsGroup(), stepsLimit)
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("steps (-want +got):\n%s", d)
			}
		})
	}
}

func TestStepString(t *testing.T) {
	dep := &Key{Kind: "Deployment", Namespace: "demo", Name: "web"}
	role := &Key{Kind: "Deployment", Namespace: "demo", Name: "web-worker"}
	tests := []struct {
		step Step
		want string
	}{
		{Step{Kind: StepPush, Image: "r/web:c-2"}, "push image r/web:c-2"},
		{Step{Kind: StepApplyObjects, Objects: []Key{{Kind: "Namespace", Name: "demo"}, {Kind: "NetworkPolicy", Namespace: "demo", Name: "default-deny"}}},
			"apply Namespace demo, NetworkPolicy default-deny"},
		{Step{Kind: StepStopRole, Role: "worker", Object: role}, "stop role worker (Deployment web-worker to 0 replicas)"},
		{Step{Kind: StepApplyDeployment, Object: dep, Action: Create}, "create Deployment web"},
		{Step{Kind: StepAwaitRollout, Object: dep, Replicas: 1, Limit: 5 * time.Minute, Rollback: RollbackLastReady},
			"await rollout of web (1 replica, limit 5m0s; on failure roll back to the last template that ran ready)"},
		{Step{Kind: StepAwaitRollout, Object: dep, Replicas: 1, Limit: time.Minute, Rollback: RollbackNone},
			"await rollout of web (1 replica, limit 1m0s; nothing to roll back to)"},
		{Step{Kind: StepAwaitReady, Object: dep, Replicas: 1, Limit: time.Minute}, "await web ready before starting its roles (limit 1m0s)"},
		{Step{Kind: StepStartRole, Role: "worker", Object: role, Action: Update, Replicas: 2, Limit: time.Minute},
			"start role worker (update Deployment web-worker, 2 replicas, limit 1m0s)"},
		{Step{Kind: StepStartRole, Role: "sso", Object: &Key{Kind: "Deployment", Namespace: "demo", Name: "web-sso"}, Action: Update, Replicas: 1, Limit: time.Minute, Rollback: RollbackLastReady},
			"roll role sso without a stop (update Deployment web-sso, 1 replica, limit 1m0s; on failure set back to its last ready template)"},
		{Step{Kind: StepStartRole, Role: "worker", Object: role, Replicas: 0, Limit: time.Minute},
			"start role worker (Deployment web-worker, 0 replicas, limit 1m0s)"},
		{Step{Kind: StepPrune, Objects: []Key{{Kind: "Service", Namespace: "demo", Name: "web-cron"}}}, "delete Service web-cron"},
		{Step{Kind: StepRemoveNode, Node: "old", Objects: []Key{{Kind: "Deployment", Namespace: "demo", Name: "old"}}},
			"remove node old: delete Deployment old"},
	}
	for _, tt := range tests {
		t.Run(string(tt.step.Kind), func(t *testing.T) {
			if got := tt.step.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}

// A saved plan carries its steps: they read back as they were planned.
func TestStepsJSON(t *testing.T) {
	p := &Plan{Namespace: "demo", Suspended: true, Nodes: []NodePlan{{Node: "web", Changes: []Change{
		{Key: Key{Kind: "Deployment", Namespace: "demo", Name: "web"}, Action: Update, Diff: []FieldDiff{{Path: "spec.template.x", New: "1"}}},
	}}}}
	steps := BuildSteps(p, stepsGroup(), stepsLimit)
	b, err := json.Marshal(steps)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"limit":"5m0s"`, `"replicas":0`, `"kind":"stop-role"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON %s lacks %s", b, want)
		}
	}
	var back Steps
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(steps, &back); d != "" {
		t.Errorf("steps after a JSON round trip (-want +got):\n%s", d)
	}
}

// The index finds what Change finds, the first of two changes of one key included.
func TestChangeIndexIsChange(t *testing.T) {
	k := func(kind, name string) Key { return Key{Kind: kind, Namespace: "demo", Name: name} }
	p := &Plan{Nodes: []NodePlan{
		{Node: "web", Changes: []Change{{Key: k("Deployment", "web"), Action: Update}, {Key: k("Service", "web"), Action: Create}}},
		{Node: "db", Changes: []Change{{Key: k("Deployment", "db"), Action: Create}, {Key: k("Service", "web"), Action: Delete}}},
	}}
	ix := p.Index()
	for _, key := range []Key{k("Deployment", "web"), k("Service", "web"), k("Deployment", "db"), k("Deployment", "gone")} {
		if got, want := ix.Change(key), p.Change(key); got != want {
			t.Errorf("Index().Change(%s) = %p, Change = %p", key, got, want)
		}
	}
	for _, name := range []string{"web", "db", "gone"} {
		if got, want := ix.Node(name), p.Node(name); got != want {
			t.Errorf("Index().Node(%s) = %p, Node = %p", name, got, want)
		}
	}
}
