package ui

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"path/filepath"

	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/status"
	"slipway.dev/slipway/internal/testkit"
)

const (
	digestA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	digestB = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

func sampleStatus() *status.Group {
	at := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	return &status.Group{
		Group: "demo", Namespace: "demo", Applied: true, StateSerial: 7,
		Nodes: []status.Node{
			{Node: "web", Desired: digestB, Running: digestA, Drift: true, Ready: 1, Replicas: 1, Phase: "ready",
				InFile: true, InState: true, Names: []string{"www.example.org", "example.org"}, Address: []string{"192.0.2.1"},
				StateVersion: "1", Copy: &status.StateCopy{From: "1", To: "2"},
				Roles: []status.Role{{Name: "worker", Replicas: 0, Want: 2, Phase: "ready"}, {Name: "sso", Ready: 1, Replicas: 1, Want: 1, Phase: "ready"}},
				LastRollout: &event.Rollout{Result: event.RolloutRolledBack, Time: at, Digest: digestA,
					Message: "CrashLoopBackOff: pod web-1: container node: back-off restarting failed container"}},
			{Node: "db", Desired: digestA, Running: digestA, Ready: 0, Replicas: 1, Phase: "failed", Reason: "ErrImagePull",
				Message: "pod db-1: container node: cannot pull", InFile: true, InState: true,
				LastRollout: &event.Rollout{Result: event.RolloutFailed, Time: at, Digest: digestA, Message: "ErrImagePull: pod db-1: container node: cannot pull"}},
			{Node: "cache", Desired: digestA, Running: digestA, Ready: 1, Replicas: 1, Phase: "ready", InFile: true, InState: true, Protected: true,
				StateVersion: "3", Copy: &status.StateCopy{From: "2", To: "3", Removable: true},
				LastRollout: &event.Rollout{Result: event.RolloutReady, Time: at, Digest: digestA}},
			{Node: "new", Phase: status.Absent, InFile: true, Names: []string{"new.example.org"}},
			{Node: "old", Desired: digestA, Running: digestA, Ready: 1, Replicas: 1, Phase: "ready", InState: true},
		},
	}
}

func TestStatusText(t *testing.T) {
	var b bytes.Buffer
	Status(&b, sampleStatus())
	testkit.Golden(t, filepath.Join("testdata", "status.txt"), b.Bytes())

	s := sampleStatus()
	s.Suspended = true
	b.Reset()
	Status(&b, s)
	if want := "Group demo is suspended: its Deployments stay at 0 replicas until `slipway resume`.\n"; !bytes.Contains(b.Bytes(), []byte(want)) {
		t.Errorf("suspended status lacks %q:\n%s", want, b.String())
	}
}

func TestStatusJSON(t *testing.T) {
	var b bytes.Buffer
	if err := StatusJSON(&b, sampleStatus()); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Group string `json:"group"`
		Nodes []struct {
			Node        string `json:"node"`
			Drift       bool   `json:"drift"`
			LastRollout *struct {
				Result  string `json:"result"`
				Digest  string `json:"digest"`
				Summary string `json:"summary"`
			} `json:"lastRollout"`
		} `json:"nodes"`
	}
	dec := json.NewDecoder(&b)
	if err := dec.Decode(&got); err != nil {
		t.Fatal(err)
	}
	if dec.More() {
		t.Error("status -o json: more than one document")
	}
	if len(got.Nodes) != 5 || got.Nodes[0].LastRollout == nil || got.Nodes[3].LastRollout != nil {
		t.Fatalf("status JSON: %+v", got)
	}
	want := "rolled back to " + digestA + " at 2026-01-02T03:04:05Z: CrashLoopBackOff: pod web-1: container node: back-off restarting failed container"
	if d := cmp.Diff(want, got.Nodes[0].LastRollout.Summary); d != "" {
		t.Errorf("summary (-want +got):\n%s", d)
	}
	if got.Nodes[0].LastRollout.Result != "rolled-back" || got.Nodes[0].LastRollout.Digest != digestA || !got.Nodes[0].Drift {
		t.Errorf("node web: %+v", got.Nodes[0])
	}
}

func TestRolloutSummary(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name string
		r    *event.Rollout
		want string
	}{
		{"none", nil, "none yet"},
		{"ready", &event.Rollout{Result: event.RolloutReady, Time: at, Digest: digestB}, "ready " + digestB + " at 2026-01-02T03:04:05Z"},
		{"rolled back", &event.Rollout{Result: event.RolloutRolledBack, Time: at, Digest: digestA, Message: "NotReady: pod web-1"},
			"rolled back to " + digestA + " at 2026-01-02T03:04:05Z: NotReady: pod web-1"},
		{"failed", &event.Rollout{Result: event.RolloutFailed, Time: at, Digest: digestB, Message: "ErrImagePull: pod web-1"},
			"failed " + digestB + " at 2026-01-02T03:04:05Z, with nothing to roll back to: ErrImagePull: pod web-1"},
		{"in flight", &event.Rollout{Result: event.RolloutInProgress, Time: at, Digest: digestB, Message: "applied while the group was suspended"},
			"in flight " + digestB + " since 2026-01-02T03:04:05Z, not ready yet; the next apply (resume, when suspended) follows it: applied while the group was suspended"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, RolloutSummary(tc.r)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}
