package ui

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"slipway.dev/slipway/internal/engine"
	"slipway.dev/slipway/internal/plan"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("%s (-want +got):\n%s", name, d)
	}
}

func samplePlan() *plan.Plan {
	k := func(kind, name string) plan.Key { return plan.Key{Kind: kind, Namespace: "demo", Name: name} }
	return &plan.Plan{
		Group: "demo", Namespace: "demo",
		Images: []plan.Image{{Name: "web", Node: "web", Tag: "reg/demo/web:c-1", Digest: "reg/demo/web@sha256:b", Push: true}},
		Nodes: []plan.NodePlan{
			{Node: "", Changes: []plan.Change{{Key: plan.Key{Kind: "Namespace", Name: "demo"}, Action: plan.Create}}},
			{Node: "old", Removed: true, Changes: []plan.Change{
				{Key: k("Deployment", "old"), Action: plan.Delete},
				{Key: k("PersistentVolumeClaim", "old-state"), Action: plan.Delete, Destructive: true, Reason: "the node's state on /var/lib is lost"},
			}},
			{Node: "web", Changes: []plan.Change{{Key: k("Deployment", "web"), Action: plan.Update, Diff: []plan.FieldDiff{
				{Path: "spec.template.spec.containers[0].image", Old: "reg/demo/web@sha256:a", New: "reg/demo/web@sha256:b"},
				{Path: "spec.template.spec.containers[0].env[2].name", New: "TZ"},
			}}}},
		},
		Drift: []plan.Drift{{Node: "web", Running: "reg/demo/web@sha256:a", State: "reg/demo/web@sha256:b", Note: "the last rollout was rolled back (CrashLoopBackOff): apply tries it again"}},
	}
}

func TestPlanText(t *testing.T) {
	var b bytes.Buffer
	Plan(&b, samplePlan())
	golden(t, "plan.txt", b.Bytes())

	b.Reset()
	Plan(&b, &plan.Plan{Group: "demo", Namespace: "demo"})
	if got := b.String(); got != "No changes.\n" {
		t.Errorf("empty plan = %q, want %q", got, "No changes.\n")
	}
}

func TestPlanJSON(t *testing.T) {
	var b bytes.Buffer
	if err := PlanJSON(&b, samplePlan()); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Changes bool        `json:"changes"`
		Counts  plan.Counts `json:"counts"`
		Group   string      `json:"group"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("plan -o json is not one JSON document: %v\n%s", err, b.String())
	}
	want := plan.Counts{Push: 1, Create: 1, Update: 1, Delete: 2}
	if d := cmp.Diff(want, doc.Counts); d != "" || !doc.Changes || doc.Group != "demo" {
		t.Errorf("json plan: changes %v group %q counts (-want +got):\n%s", doc.Changes, doc.Group, d)
	}
}

func TestPlainLines(t *testing.T) {
	var b bytes.Buffer
	p := NewPlain(&b)
	at := time.Date(2026, 11, 29, 10, 4, 5, 0, time.UTC)
	p.Event(engine.Event{Time: at, Node: "web", Phase: engine.PhaseRollout, Message: "web: progressing", Ready: 0, Desired: 1})
	p.Event(engine.Event{Time: at, Phase: engine.PhaseDone, Message: "destroyed"})
	p.Close()
	want := "10:04:05 web          rollout     0/1 ready  web: progressing\n" +
		"10:04:05 group        done        destroyed\n"
	if d := cmp.Diff(want, strings.ReplaceAll(b.String(), at.Local().Format("15:04:05"), "10:04:05")); d != "" {
		t.Errorf("plain lines (-want +got):\n%s", d)
	}
}

func TestLiveCloseTwice(t *testing.T) {
	var b bytes.Buffer
	p := NewLive(&b)
	p.Event(engine.Event{Time: time.Now(), Node: "web", Phase: engine.PhaseFailed, Message: "deployment web: rollout failed"})
	p.Close()
	p.Close() // a printer swapped out and closed again by a deferred Close must not panic
	frames := strings.Split(b.String(), "\x1b[2K")
	if last := frames[len(frames)-1]; !strings.Contains(last, "failed") || !strings.Contains(last, "deployment web: rollout failed") {
		t.Errorf("last frame does not show the failure: %q", last)
	}
}
