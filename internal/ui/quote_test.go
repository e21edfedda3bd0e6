package ui

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/status"
)

// hostile is a value from the cluster (an env value, a label, a record, a rollout message)
// that erases the line above and writes a fake result, with a CR, a BEL, a DEL, a C1 CSI, a
// bidi override and a byte that is not UTF-8.
const hostile = "ok\x1b[2K\x1b[1A\x1b[32mNo changes.\r\a\x7f\u009b2K\u202e\xff"

// quotedHostile is hostile as a printer must write it: each such byte quoted.
const quotedHostile = `ok\x1b[2K\x1b[1A\x1b[32mNo changes.\r\x07\x7f\u009b2K\u202e\xff`

// rawControl returns the first byte (or rune) of out a terminal would act on: a C0 control
// other than the line break, DEL, a C1 control, a non-printable rune, or invalid UTF-8.
func rawControl(out string) (string, bool) {
	for i, r := range out {
		switch {
		case r == utf8.RuneError:
			return out[i:min(len(out), i+1)], true
		case r == '\n':
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) || r == '\u202e':
			return string(r), true
		}
	}
	return "", false
}

// TestHostileValuesQuoted (issue 43 item 11): every value the text printers write that came
// from the cluster, a state or a server (plan's diff values, paths, reasons, notes, drift,
// steps, records, SPIRE changes; status; state show; waves) reaches the screen quoted: no raw
// escape code, CR or other C0/C1 byte, and the quoted form instead.
func TestHostileValuesQuoted(t *testing.T) {
	key := plan.Key{Kind: "Deployment", Namespace: "demo", Name: "web"}
	p := &plan.Plan{Group: "demo", Namespace: "demo",
		Notes:  []string{"the secret server said " + hostile},
		Drift:  []plan.Drift{{Node: "web", Running: "r/web@" + hostile, State: "r/web@sha256:1", Note: hostile}},
		Images: []plan.Image{{Name: "web", Node: "web", Tag: "r/web:" + hostile, Push: true}},
		Nodes: []plan.NodePlan{{Node: "web",
			Changes: []plan.Change{
				{Key: key, Action: plan.Update, Diff: []plan.FieldDiff{
					{Path: "spec.template.spec.containers[0].env[0].value", Old: hostile, New: "ok"},
					{Path: "metadata.annotations." + hostile, New: hostile},
					{Path: "metadata.labels.x", Old: hostile},
				}},
				{Key: plan.Key{Kind: "Job", Namespace: "demo", Name: "web-state"}, Action: plan.Conflict, Reason: "it belongs to group " + hostile},
			},
			Records:   []plan.RecordChange{{Name: "www.example.", Kind: "address", Action: plan.Update, Old: []string{"TXT " + hostile}, New: []string{"A 192.0.2.1"}}},
			Migration: &plan.Migration{From: hostile, To: "2"},
		}},
		Spire: []plan.SpireChange{{Node: "web", What: "entry", Name: "spiffe://td/" + hostile, Action: plan.Delete, Cluster: "uid-" + hostile}},
		Steps: &plan.Steps{Nodes: []plan.NodeSteps{{Node: "web", Steps: []plan.Step{{Kind: plan.StepRemoveCopy, Node: "web", Object: &plan.Key{Kind: "Job", Namespace: "demo", Name: "web-state"}, Payload: plan.CopyRemoval{StateVersion: hostile}}}}}},
	}
	rollout := &event.Rollout{Result: event.RolloutRolledBack, Digest: "sha256:" + hostile, Message: hostile}
	st := &status.Group{Group: "demo", Namespace: "demo", Applied: true, Nodes: []status.Node{{
		Node: "web", InFile: true, InState: true, Phase: status.Failed, Reason: hostile, Message: hostile,
		Desired: "sha256:" + hostile, Running: hostile, StateVersion: hostile, LastRollout: rollout, Drift: true,
		Roles: []status.Role{{Name: hostile, Phase: status.Failed, Reason: hostile, Message: hostile, Want: 1}},
		Names: []string{"www.example."}, Address: []string{hostile}, DNS: hostile,
	}}}
	state := StateView{Group: "demo", Location: "kubernetes://" + hostile,
		Lock:  &LockView{Holder: hostile, ID: hostile, Process: "not running"},
		State: &StateDoc{Namespace: hostile, Lineage: hostile, Nodes: []StateNode{{Name: "web", MachineID: hostile, ImageRef: hostile, Digest: hostile, LastRollout: rollout, PreviousReady: hostile}}}}
	wave := WaveGroup{Name: "shop", File: "/srv/" + hostile, Target: "all", Namespace: "shop"}
	for name, print := range map[string]func(w *bytes.Buffer){
		"plan": func(w *bytes.Buffer) { PlanNotes(w, p); Plan(w, p) },
		"plan of move": func(w *bytes.Buffer) {
			Plan(w, &plan.Plan{Group: "demo", Namespace: "demo", Move: &plan.Move{From: hostile, Delete: []plan.Change{{Key: key, Action: plan.Delete}}}, Nodes: []plan.NodePlan{{Node: "web", Changes: []plan.Change{{Key: key, Action: plan.Delete}}}}})
		},
		"status":     func(w *bytes.Buffer) { Status(w, st) },
		"state show": func(w *bytes.Buffer) { _ = PrintState(w, state) },
		"waves plan": func(w *bytes.Buffer) { WavesPlan(w, []WavePlan{{WaveGroup: wave, Plan: p}}, PlanOptions{}) },
		"waves status": func(w *bytes.Buffer) {
			WavesStatus(w, "waves.yaml", []WaveHealth{{WaveGroup: wave, Why: []string{hostile}, Blocks: []string{"b"}, Status: st}})
		},
		"images": func(w *bytes.Buffer) {
			ImageEvents(w, false)(event.Image{Name: "web", Kind: event.ImageWarning, Message: hostile})
			_ = PrintPushed(w, []PushedImage{{Digest: "r/web@" + hostile}}, false)
		},
	} {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			print(&b)
			out := b.String()
			if c, found := rawControl(out); found {
				t.Errorf("raw %q in the output:\n%s", c, out)
			}
			if !strings.Contains(out, quotedHostile) {
				t.Errorf("the value is not shown quoted (%s):\n%s", quotedHostile, out)
			}
		})
	}
}
