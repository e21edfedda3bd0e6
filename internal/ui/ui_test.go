package ui

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/testkit"
)

func samplePlan() *plan.Plan {
	k := func(kind, name string) plan.Key { return plan.Key{Kind: kind, Namespace: "demo", Name: name} }
	p := &plan.Plan{
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
	g := &spec.Group{Name: "demo", Nodes: []*spec.Node{{Name: "web"}}}
	p.Steps = plan.BuildSteps(p, g, func(*spec.Node) time.Duration { return 5 * time.Minute })
	return p
}

func TestPlanText(t *testing.T) {
	tests := []struct {
		name   string
		color  bool
		golden string
	}{
		{"plain", false, "plan.txt"},
		{"colour", true, "plan-color.txt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			PlanWith(&b, samplePlan(), PlanOptions{Color: tt.color})
			testkit.Golden(t, filepath.Join("testdata", tt.golden), b.Bytes())
			if hasEsc := strings.Contains(b.String(), "\x1b["); hasEsc != tt.color {
				t.Errorf("escape codes in the output: %v, want %v", hasEsc, tt.color)
			}
			// Every change line has its action in the same column, whatever its mark.
			for _, line := range strings.Split(ansi.ReplaceAllString(b.String(), ""), "\n") {
				f := strings.Fields(line)
				if len(f) < 3 || !strings.HasPrefix(line, "    ") || strings.HasPrefix(line, "     ") || !isMark(f[0]) {
					continue
				}
				if col := strings.Index(line, " "+f[1]+" ") + 1; col != 8 {
					t.Errorf("action %q of %q in column %d, want 8", f[1], line, col)
				}
			}
		})
	}

	var b bytes.Buffer
	Plan(&b, &plan.Plan{Group: "demo", Namespace: "demo"})
	if got := b.String(); got != "No changes.\n" {
		t.Errorf("empty plan = %q, want %q", got, "No changes.\n")
	}
}

var ansi = regexp.MustCompile("\x1b\\[[0-9;]*m")

func isMark(s string) bool { return s == "+" || s == "~" || s == "-" || s == "-/+" || s == "^" }

func TestUseColor(t *testing.T) {
	tests := []struct {
		name                 string
		terminal, noColorArg bool
		noColorEnv           string
		want                 bool
	}{
		{"terminal", true, false, "", true},
		{"no terminal", false, false, "", false},
		{"NO_COLOR set", true, false, "1", false},
		{"--no-color", true, true, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := UseColor(tt.terminal, tt.noColorArg, tt.noColorEnv); got != tt.want {
				t.Errorf("UseColor = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestPlanOwnership: objects slipway would take over, objects being deleted outside it and a
// namespace it did not create each show in the text plan and its summary (issue 11 items 3-5).
func TestPlanOwnership(t *testing.T) {
	k := func(kind, name string) plan.Key { return plan.Key{Kind: kind, Namespace: "demo", Name: name} }
	p := &plan.Plan{Group: "demo", Namespace: "demo", ForeignNamespace: true, Nodes: []plan.NodePlan{
		{Node: "solo", Changes: []plan.Change{
			{Key: k("Service", "solo"), Action: plan.Conflict, Reason: "Service demo/solo exists and slipway did not make it: apply will not take it over; delete or rename it, or deploy the group to another namespace"},
			{Key: k("PersistentVolumeClaim", "solo-state"), Action: plan.Terminating, Destructive: true, Reason: "being deleted outside slipway (Terminating since 2026-12-01 00:00:00Z); the node's state on /var/lib is lost with it; apply will not roll out node solo until it is gone (it goes once no pod uses it); then apply makes it anew"},
		}},
	}}
	var b bytes.Buffer
	Plan(&b, p)
	testkit.Golden(t, filepath.Join("testdata", "plan-ownership.txt"), b.Bytes())
	var j bytes.Buffer
	if err := PlanJSON(&j, p); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		ForeignNamespace bool           `json:"foreignNamespace"`
		Counts           map[string]int `json:"counts"`
	}
	if err := json.Unmarshal(j.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if !doc.ForeignNamespace || doc.Counts["conflict"] != 1 || doc.Counts["terminating"] != 1 {
		t.Errorf("plan -o json: foreignNamespace %v, counts %v; want true, 1 conflict, 1 terminating", doc.ForeignNamespace, doc.Counts)
	}
}

func TestPlanJSON(t *testing.T) {
	p := samplePlan()
	p.Version, p.Created, p.StateSerial = plan.FormatVersion, time.Date(2026, 11, 29, 10, 4, 5, 0, time.UTC), 7
	var b bytes.Buffer
	if err := PlanJSON(&b, p); err != nil {
		t.Fatal(err)
	}
	testkit.Golden(t, filepath.Join("testdata", "plan.json"), b.Bytes())
	var doc map[string]any
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("plan -o json is not one JSON document: %v\n%s", err, b.String())
	}
	want := map[string]any{"push": 1.0, "create": 1.0, "update": 1.0, "replace": 0.0, "delete": 2.0, "conflict": 0.0, "terminating": 0.0, "records": 0.0, "recordConflicts": 0.0, "migrate": 0.0, "removeCopy": 0.0, "spire": 0.0, "central": 0.0}
	if d := cmp.Diff(want, doc["counts"]); d != "" {
		t.Errorf("counts (-want +got):\n%s", d)
	}
	if doc["version"] != float64(JSONVersion) || doc["changes"] != true || doc["group"] != "demo" {
		t.Errorf("version %v, changes %v, group %v", doc["version"], doc["changes"], doc["group"])
	}
	for _, n := range doc["nodes"].([]any) {
		if name := n.(map[string]any)["node"]; name == "" {
			t.Errorf("a node entry without a name: %v", n)
		}
	}
	if gc, _ := doc["groupChanges"].([]any); len(gc) != 1 {
		t.Errorf("groupChanges = %v, want the namespace", doc["groupChanges"])
	}
}

func TestJSONVersion(t *testing.T) {
	var b bytes.Buffer
	p := NewJSON(&b)
	p.Event(event.Event{Time: time.Now(), Node: "web", Phase: event.PhaseRollout})
	if err := StatusJSON(&b, sampleStatus()); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(&b)
	for _, what := range []string{"event line", "status"} {
		var doc struct {
			Version *int `json:"version"`
		}
		if err := dec.Decode(&doc); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if doc.Version == nil || *doc.Version != JSONVersion {
			t.Errorf("%s: version %v, want %d", what, doc.Version, JSONVersion)
		}
	}
}

func TestPlainLines(t *testing.T) {
	var b bytes.Buffer
	p := NewPlain(&b)
	at := time.Date(2026, 11, 29, 10, 4, 5, 0, time.UTC)
	p.Event(event.Event{Time: at, Node: "web", Phase: event.PhaseRollout, Message: "web: progressing", Ready: 0, Desired: 1})
	p.Event(event.Event{Time: at, Phase: event.PhaseDone, Message: "destroyed"})
	// A message may carry the cluster's words: one line, escape codes quoted (issue 35).
	p.Event(event.Event{Time: at, Node: "web", Phase: event.PhaseFailed, Message: "boom\x1b[1A\x1b[2K\nNo changes."})
	p.Close()
	want := "10:04:05 web          rollout     0/1 ready  web: progressing\n" +
		"10:04:05 group        done        destroyed\n" +
		`10:04:05 web          failed      boom\x1b[1A\x1b[2K\nNo changes.` + "\n"
	if d := cmp.Diff(want, strings.ReplaceAll(b.String(), at.Local().Format("15:04:05"), "10:04:05")); d != "" {
		t.Errorf("plain lines (-want +got):\n%s", d)
	}
}

func TestLiveCloseTwice(t *testing.T) {
	var b bytes.Buffer
	p := NewLive(&b)
	p.Event(event.Event{Time: time.Now(), Node: "web", Phase: event.PhaseFailed, Message: "deployment web: rollout failed"})
	p.Close()
	p.Close() // a printer swapped out and closed again by a deferred Close must not panic
	frames := strings.Split(b.String(), "\x1b[2K")
	if last := frames[len(frames)-1]; !strings.Contains(last, "failed") || !strings.Contains(last, "deployment web: rollout failed") {
		t.Errorf("last frame does not show the failure: %q", last)
	}
}

// TestApplied is the line after a successful apply: its counts, or "No changes."
func TestApplied(t *testing.T) {
	for _, c := range []struct {
		name string
		p    *plan.Plan
		want string
	}{
		{"changes", samplePlan(), "Apply complete: 1 image(s) pushed, 1 created, 1 updated, 0 replaced, 2 deleted.\n"},
		{"none", &plan.Plan{Group: "demo", Namespace: "demo"}, "No changes.\n"},
		// Issue 35 item 15: a run that only moved names said it changed nothing.
		{"dns only", &plan.Plan{Group: "demo", Namespace: "demo", Nodes: []plan.NodePlan{
			{Node: "web", Records: []plan.RecordChange{
				{Name: "web.example.org", Kind: "address", Action: plan.Create, New: []string{"A 192.0.2.1"}},
				{Name: "old.example.org", Kind: "address", Action: plan.Delete, Old: []string{"A 192.0.2.1"}},
			}},
			{Node: "mx", Records: []plan.RecordChange{
				{Name: "example.org", Kind: "spf", Action: plan.Update, Old: []string{"TXT v=spf1 -all"}, New: []string{"TXT v=spf1 mx -all"}},
				{Name: "example.org", Kind: "mx", Action: plan.Create, Unknown: true},
			}},
		}}, "Apply complete: 0 image(s) pushed, 0 created, 0 updated, 0 replaced, 0 deleted; DNS: 2 record set(s) published, 1 changed, 1 retired.\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := Applied(&b, c.p); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(c.want, b.String()); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}
