package plan

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// payloadSteps are a step of each kind that carries a payload in JSON, and the ones whose
// payload stays out of it, with the JSON and the line each had when the DNS records, the
// migration and the state version were fields of Step (issue 45): moving them into payloads
// changed neither.
func payloadSteps() []struct {
	name, json, text string
	step             Step
} {
	job := Key{Kind: "Job", Namespace: "demo", Name: "web-state"}
	dep := Key{Kind: "Deployment", Namespace: "demo", Name: "web"}
	m := Migration{From: "1", To: "2"}
	published := []RecordChange{
		{Name: "www.example.org", Kind: "address", Action: Update, Old: []string{"A 192.0.2.1"}, New: []string{"A 192.0.2.9"}},
		{Name: "example.org", Kind: "mx", Action: Create, New: []string{"MX 10 mail.example.org."}},
		{Name: "example.org", Kind: "spf", Action: Update, Old: []string{`TXT "<a&b>"`}, New: []string{`TXT "v=spf1 -all"`}},
	}
	return []struct {
		name, json, text string
		step             Step
	}{
		{"publish-dns", `{"kind":"publish-dns","node":"web","records":[{"name":"www.example.org","kind":"address","action":"update","old":["A 192.0.2.1"],"new":["A 192.0.2.9"]},{"name":"example.org","kind":"mx","action":"create","new":["MX 10 mail.example.org."]},{"name":"example.org","kind":"spf","action":"update","old":["TXT \"\u003ca\u0026b\u003e\""],"new":["TXT \"v=spf1 -all\""]}]}`,
			"publish dns www.example.org, example.org (mx), example.org (spf) (one UPDATE each, after the address is known)",
			Step{Kind: StepPublishDNS, Node: "web", Payload: DNSPublish{published}}},
		{"retire-dns", `{"kind":"retire-dns","node":"web","records":[{"name":"old.example.org","kind":"address","action":"delete","old":["A 192.0.2.1"]}]}`,
			"retire dns old.example.org",
			Step{Kind: StepRetireDNS, Node: "web", Payload: DNSRetire{[]RecordChange{{Name: "old.example.org", Kind: "address", Action: Delete, Old: []string{"A 192.0.2.1"}}}}}},
		{"apply-deployment with a migration", `{"kind":"apply-deployment","node":"web","object":{"kind":"Deployment","namespace":"demo","name":"web"},"action":"update","migration":{"from":"1","to":"2"}}`,
			"update Deployment web (state migration 1 -> 2: its init container slipway-state copies /var/lib on the volume before the node starts)",
			Step{Kind: StepApplyDeployment, Node: "web", Object: &dep, Action: Update, Payload: MigrationCopy{m}}},
		{"await-rollout with a migration", `{"kind":"await-rollout","node":"web","object":{"kind":"Deployment","namespace":"demo","name":"web"},"rollback":"last-ready","migration":{"from":"1","to":"2"},"replicas":1,"limit":"5m0s"}`,
			"await rollout of web (1 replica, limit 5m0s; on failure roll back to the last template that ran ready, which puts the copy of /var/lib back first; the state keeps version 1)",
			Step{Kind: StepAwaitRollout, Node: "web", Object: &dep, Replicas: 1, Limit: 5 * time.Minute, Rollback: RollbackLastReady, Payload: MigrationRestore{m}}},
		{"await-rollout suspended, from no version", `{"kind":"await-rollout","node":"web","object":{"kind":"Deployment","namespace":"demo","name":"web"},"rollback":"last-ready","migration":{"from":"","to":"1"},"replicas":0,"limit":"5m0s"}`,
			"await rollout of web (0 replicas, limit 5m0s; on failure roll back to the last template that ran ready, which puts the copy of /var/lib back first; the state keeps version none)",
			Step{Kind: StepAwaitRollout, Node: "web", Object: &dep, Limit: 5 * time.Minute, Rollback: RollbackLastReady, Payload: MigrationRestore{Migration{To: "1"}}}},
		{"remove-copy", `{"kind":"remove-copy","node":"web","object":{"kind":"Job","namespace":"demo","name":"web-state"},"stateVersion":"2","limit":"5m0s"}`,
			"remove the copy of /var/lib from the volume (Job web-state on the pod's host; the data stays at state version 2; limit 5m0s)",
			Step{Kind: StepRemoveCopy, Node: "web", Object: &job, Limit: 5 * time.Minute, Payload: CopyRemoval{"2"}}},
		{"apply-deployment without a migration", `{"kind":"apply-deployment","node":"web","object":{"kind":"Deployment","namespace":"demo","name":"web"},"action":"update"}`,
			"update Deployment web",
			Step{Kind: StepApplyDeployment, Node: "web", Object: &dep, Action: Update}},
		{"await-rollout of a new Deployment", `{"kind":"await-rollout","node":"web","object":{"kind":"Deployment","namespace":"demo","name":"web"},"rollback":"none","replicas":1,"limit":"5m0s"}`,
			"await rollout of web (1 replica, limit 5m0s; nothing to roll back to)",
			Step{Kind: StepAwaitRollout, Node: "web", Object: &dep, Replicas: 1, Limit: 5 * time.Minute, Rollback: RollbackNone}},
	}
}

// TestStepJSON: each step is written as it was and reads back as it was written; its line
// is the one plan printed.
func TestStepJSON(t *testing.T) {
	for _, tc := range payloadSteps() {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.step)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.json, string(b)); d != "" {
				t.Errorf("JSON (-want +got):\n%s", d)
			}
			var back Step
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.step, back); d != "" {
				t.Errorf("read back (-want +got):\n%s", d)
			}
			if got := tc.step.String(); got != tc.text {
				t.Errorf("String() = %q, want %q", got, tc.text)
			}
		})
	}
}

// TestStepJSONLeavesOutPlanPayloads: a spire or central step's payload stays out of the
// step's JSON (the plan saves it in its own field), and a payload on a kind whose JSON
// carries none is not written either.
func TestStepJSONLeavesOutPlanPayloads(t *testing.T) {
	for _, tc := range []struct {
		name string
		step Step
		want string
	}{
		{"spire", Step{Kind: StepSpire, Payload: SpireChanges{{What: SpireAllow, Name: "demo:node-web", Action: Create}}}, `{"kind":"spire"}`},
		{"central", Step{Kind: StepCentral, Payload: CentralChanges{{What: CentralKV, Key: "old", Name: "secret/x", Action: Delete}}}, `{"kind":"central"}`},
		{"a kind of no payload", Step{Kind: StepPrune, Objects: []Key{{Kind: "Service", Namespace: "demo", Name: "web"}}, Payload: DNSRetire{}}, `{"kind":"prune","objects":[{"kind":"Service","namespace":"demo","name":"web"}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.step)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Errorf("JSON %s, want %s", b, tc.want)
			}
		})
	}
}

// TestStepJSONRefusesBadPayload: a payload of another type than its kind's is an error
// naming the step, not a file that reads back as something else; a payload of the wrong
// shape read back is one too.
func TestStepJSONRefusesBadPayload(t *testing.T) {
	for _, s := range []Step{
		{Kind: StepPublishDNS, Payload: SpireChanges{}},
		{Kind: StepPublishDNS, Payload: DNSRetire{[]RecordChange{{Name: "www.example.org", Kind: "address", Action: Delete}}}},
		{Kind: StepAwaitRollout, Payload: MigrationCopy{Migration{From: "1", To: "2"}}},
	} {
		_, err := json.Marshal(s)
		if err == nil || !strings.Contains(err.Error(), "step "+string(s.Kind)+": payload") {
			t.Errorf("a %s step with a %T payload: error %v", s.Kind, s.Payload, err)
		}
	}
	var s Step
	if err := json.Unmarshal([]byte(`{"kind":"publish-dns","records":"www"}`), &s); err == nil || !strings.Contains(err.Error(), "step publish-dns") {
		t.Errorf(`records "www" read back: error %v`, err)
	}
}

// TestSavedPlanKeepsStepPayloads: a saved plan read back holds the steps it was saved with,
// their DNS records, migration and kept version included.
func TestSavedPlanKeepsStepPayloads(t *testing.T) {
	dep := Key{Kind: "Deployment", Namespace: "demo", Name: "web"}
	p := &Plan{Version: FormatVersion, Group: "demo", Namespace: "demo", Nodes: []NodePlan{
		{Node: "db", RemoveCopy: &Copy{From: "1", To: "2"}},
		{Node: "web", Changes: []Change{{Key: dep, Action: Update}}, Migration: &Migration{From: "2", To: "3"},
			Records: []RecordChange{
				{Name: "www.example.org", Kind: "address", Action: Create, New: []string{"A 192.0.2.1"}},
				{Name: "old.example.org", Kind: "address", Action: Delete, Old: []string{"A 192.0.2.1"}},
			}},
	}}
	p.Steps = BuildSteps(p, stepsGroup(), stepsLimit)
	kinds := map[StepKind]bool{}
	for _, ns := range p.Steps.Nodes {
		for _, st := range ns.Steps {
			if st.Payload != nil {
				kinds[st.Kind] = true
			}
		}
	}
	if len(kinds) != len(stepPayloads) {
		t.Fatalf("the plan's steps carry payloads of %v, want one of each kind of stepPayloads", kinds)
	}
	path := filepath.Join(t.TempDir(), "plan.json")
	if err := p.Write(path); err != nil {
		t.Fatal(err)
	}
	back, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(p.Steps, back.Steps); d != "" {
		t.Errorf("steps read back (-want +got):\n%s", d)
	}
}

// TestJoinObjects: the members of each object in order, empty ones adding nothing; anything
// but an object is an error.
func TestJoinObjects(t *testing.T) {
	for _, tc := range []struct {
		name string
		objs []string
		want string
	}{
		{"none", nil, `{}`},
		{"in order", []string{`{"kind":"a"}`, `{"records":[1]}`, `{"limit":"1s"}`}, `{"kind":"a","records":[1],"limit":"1s"}`},
		{"empty ones", []string{`{}`, `{"a":1}`, ` { } `, `{"b":{"c":2}}`}, `{"a":1,"b":{"c":2}}`},
		{"not an object", []string{`{"a":1}`, `[1]`}, ""},
		{"nothing", []string{``}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := make([][]byte, len(tc.objs))
			for i, o := range tc.objs {
				objs[i] = []byte(o)
			}
			got, err := JoinObjects(objs...)
			if tc.want == "" {
				if err == nil {
					t.Fatalf("JoinObjects = %s, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
