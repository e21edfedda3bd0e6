package plan

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"slipway.dev/slipway/internal/spec"
)

func deployment(name, version string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": name, "namespace": "demo", "labels": map[string]any{spec.LabelNode: name}},
		"spec":     map[string]any{"template": map[string]any{"metadata": map[string]any{"annotations": map[string]any{"v": version}}}},
	}}
	return u
}

// TestMigrations: a version change of a running node is a migration of it; a new node has
// none; a copy left after its migration ran ready is removed, before any new migration.
func TestMigrations(t *testing.T) {
	key := Key{Kind: "Deployment", Namespace: "demo", Name: "web"}
	for _, tc := range []struct {
		name                string
		live                bool   // the Deployment exists
		liveVersion         string // what the live template says (a change when it differs)
		want, had           string
		copy                *Copy
		wantMigration       *Migration
		wantRemove          *Copy
		wantSteps           []StepKind
		wantChanges, wantNo bool
	}{
		{name: "version change", live: true, liveVersion: "1", want: "2", had: "1",
			wantMigration: &Migration{From: "1", To: "2"},
			wantSteps:     []StepKind{StepApplyDeployment, StepAwaitRollout, StepRemoveCopy}},
		{name: "a node deployed before it had a version", live: true, liveVersion: "", want: "1", had: "",
			wantMigration: &Migration{From: "", To: "1"},
			wantSteps:     []StepKind{StepApplyDeployment, StepAwaitRollout, StepRemoveCopy}},
		{name: "a new node: nothing to copy", want: "1",
			wantSteps: []StepKind{StepApplyDeployment, StepAwaitRollout}},
		{name: "unchanged version, other change", live: true, liveVersion: "x", want: "2", had: "2",
			wantSteps: []StepKind{StepApplyDeployment, StepAwaitRollout}},
		{name: "version removed from the file: no migration", live: true, liveVersion: "2", want: "", had: "2",
			wantSteps: []StepKind{StepApplyDeployment, StepAwaitRollout}},
		{name: "a copy left after its migration ran ready, nothing else", live: true, liveVersion: "2", want: "2", had: "2",
			copy: &Copy{From: "1", To: "2"}, wantRemove: &Copy{From: "1", To: "2"},
			wantSteps: []StepKind{StepRemoveCopy}},
		{name: "a copy left, then a new migration: removed first", live: true, liveVersion: "2", want: "3", had: "2",
			copy: &Copy{From: "1", To: "2"}, wantRemove: &Copy{From: "1", To: "2"}, wantMigration: &Migration{From: "2", To: "3"},
			wantSteps: []StepKind{StepRemoveCopy, StepApplyDeployment, StepAwaitRollout, StepRemoveCopy}},
		{name: "a copy of a migration that never ran ready stays", live: true, liveVersion: "1", want: "2", had: "1",
			copy: &Copy{From: "1", To: "2"}, wantMigration: &Migration{From: "1", To: "2"},
			wantSteps: []StepKind{StepApplyDeployment, StepAwaitRollout, StepRemoveCopy}},
		{name: "no change, no copy", live: true, liveVersion: "2", want: "2", had: "2", wantNo: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Group: "demo", Namespace: "demo",
				Desired:  []*unstructured.Unstructured{deployment("web", tc.want)},
				Live:     map[Key]*unstructured.Unstructured{},
				Versions: map[string]string{"web": tc.want}, StateVersions: map[string]string{"web": tc.had},
				Copies: map[string]Copy{}}
			if tc.live {
				in.Live[key] = deployment("web", tc.liveVersion)
			}
			if tc.copy != nil {
				in.Copies["web"] = *tc.copy
			}
			p := Compute(in)
			np := p.Node("web")
			if diff := cmp.Diff(tc.wantMigration, np.Migration); diff != "" {
				t.Errorf("migration (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantRemove, np.RemoveCopy); diff != "" {
				t.Errorf("copy to remove (-want +got):\n%s", diff)
			}
			if p.HasChanges() == tc.wantNo {
				t.Errorf("HasChanges = %v", p.HasChanges())
			}
			g := stepsGroup()
			g.Nodes = g.Nodes[:1]
			g.Nodes[0].Name = "web"
			var kinds []StepKind
			for _, st := range BuildSteps(p, g, func(*spec.Node) time.Duration { return time.Minute }).Node("web") {
				kinds = append(kinds, st.Kind)
				if kept, _ := st.Payload.(CopyRemoval); st.Kind == StepRemoveCopy && kept.StateVersion != tc.had && kept.StateVersion != tc.want {
					t.Errorf("remove-copy keeps version %q, want %q or %q", kept.StateVersion, tc.had, tc.want)
				}
			}
			if diff := cmp.Diff(tc.wantSteps, kinds); diff != "" {
				t.Errorf("steps (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRemoveCopyForeignJob (issue 35 item 3, issue 43 item 12): a Job named as a node's
// removal Job that slipway did not make for the group is a conflict of the plan that would
// remove a copy, the one left or the one a migration of this plan takes, and apply is refused
// before any change.
func TestRemoveCopyForeignJob(t *testing.T) {
	job := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "batch/v1", "kind": "Job",
		"metadata": map[string]any{"name": "web-state", "namespace": "demo", "resourceVersion": "7", "labels": map[string]any{"app": "backup"}},
	}}
	for _, tc := range []struct {
		name     string
		want     string
		copy     *Copy
		conflict bool
	}{
		{name: "the copy left is removed", want: "2", copy: &Copy{From: "1", To: "2"}, conflict: true},
		{name: "the copy left is removed before a migration", want: "3", copy: &Copy{From: "1", To: "2"}, conflict: true},
		{name: "a migration removes its copy once it runs ready", want: "3", conflict: true},
		{name: "no copy to remove: the Job is none of the plan's business", want: "2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := Key{Kind: "Deployment", Namespace: "demo", Name: "web"}
			in := Input{Group: "demo", Namespace: "demo",
				Desired:  []*unstructured.Unstructured{deployment("web", tc.want)},
				Live:     map[Key]*unstructured.Unstructured{key: deployment("web", "2")},
				Versions: map[string]string{"web": tc.want}, StateVersions: map[string]string{"web": "2"},
				Copies: map[string]Copy{}, ForeignJobs: map[string]Object{"web": job}}
			if tc.copy != nil {
				in.Copies["web"] = *tc.copy
			}
			p := Compute(in)
			err := p.Blocked()
			if !tc.conflict {
				if err != nil {
					t.Fatalf("Blocked = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "Job demo/web-state exists and slipway did not make it: apply removes node web's copy of /var/lib with a Job of that name and will not delete this one") {
				t.Errorf("Blocked = %v, want the Job named as a conflict", err)
			}
			if c := p.Counts(); c.Conflict != 1 {
				t.Errorf("conflicts counted: %d, want 1", c.Conflict)
			}
			g := stepsGroup()
			g.Nodes = g.Nodes[:1]
			g.Nodes[0].Name = "web"
			if steps := BuildSteps(p, g, func(*spec.Node) time.Duration { return time.Minute }).Node("web"); len(steps) > 0 {
				t.Errorf("steps of a plan with a conflict: %v, want none (apply refuses before any change)", steps)
			}
		})
	}
}
