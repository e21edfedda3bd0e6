package e2e

import (
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestJSONOutput: `plan -o json` is one JSON document; `apply -o json` prints JSON lines of
// events on stdout.
func TestJSONOutput(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "json", soloGroup, "solo")
	r := g.MustRun(0, "plan", "-o", "json")
	dec := json.NewDecoder(strings.NewReader(r.Stdout))
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("plan -o json: %v\n%s", err, r)
	}
	if err := dec.Decode(new(any)); !errors.Is(err, io.EOF) {
		t.Fatalf("plan -o json: want one document, got more (%v)\n%s", err, r.Stdout)
	}
	for _, k := range []string{"changes", "counts", "nodes"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("plan -o json: no %q in %s", k, r.Stdout)
		}
	}
	p := g.Plan()
	if !p.Changes || p.Counts.Push != 1 || p.Counts.Create != 6 {
		t.Errorf("plan -o json of a new group: want changes, 1 push, 6 creates (namespace, default-deny, policy, account, claim, Deployment), got changes=%t counts=%+v", p.Changes, p.Counts)
	}

	r = g.MustRun(0, "apply", "--yes", "-o", "json")
	var phases []string
	for i, line := range strings.Split(strings.TrimRight(r.Stdout, "\n"), "\n") {
		var ev struct {
			Time  string `json:"time"`
			Node  string `json:"node"`
			Phase string `json:"phase"`
		}
		var raw map[string]any
		if err := json.Unmarshal([]byte(line), &raw); err != nil {
			t.Fatalf("apply -o json: line %d is not JSON: %v: %q", i+1, err, line)
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil || ev.Time == "" || ev.Phase == "" {
			t.Fatalf("apply -o json: line %d is not an event (time, phase): %q", i+1, line)
		}
		if ev.Node == "solo" && !slices.Contains(phases, ev.Phase) {
			phases = append(phases, ev.Phase)
		}
	}
	for _, want := range []string{"push", "apply", "rollout", "done"} {
		if !slices.Contains(phases, want) {
			t.Errorf("apply -o json: no %s event for node solo; phases %v\n%s", want, phases, r.Stdout)
		}
	}
	r = g.MustRun(0, "apply", "--yes", "-o", "json")
	var last map[string]any
	lines := strings.Split(strings.TrimRight(r.Stdout, "\n"), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil {
		t.Fatalf("no-op apply -o json: %v\n%s", err, r.Stdout)
	}
	if diff := cmp.Diff(map[string]any{"phase": "unchanged", "message": "No changes."}, map[string]any{"phase": last["phase"], "message": last["message"]}); diff != "" {
		t.Errorf("no-op apply -o json: last event (-want +got):\n%s", diff)
	}
}
