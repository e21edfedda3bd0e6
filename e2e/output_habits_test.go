package e2e

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestStalledStateServer: plan against an HTTP state server that never answers says, after a
// few seconds, that it waits for the state server, and gives up after --state-timeout instead
// of hanging for minutes.
func TestStalledStateServer(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })

	g := NewGroup(t, "stall", soloGroup, "solo")
	g.WithEnv("SLIPWAY_STATE="+srv.URL+"/state/"+g.Name, "SLIPWAY_HTTP_RETRY_MAX=0")
	start := time.Now()
	r := g.MustRun(1, "plan", "--state-timeout", "5s")
	took := time.Since(start)
	for _, want := range []string{
		"waiting for the state server: GET " + srv.URL + "/state/" + g.Name + " has not answered in 3s",
		"did not answer within 5s (--state-timeout)",
	} {
		if !strings.Contains(r.Stderr, want) {
			t.Errorf("plan against a stalled state server: stderr lacks %q\n%s", want, r)
		}
	}
	// One request of 5s, no retries: well under the minutes it hung for before.
	if took > time.Minute {
		t.Errorf("plan took %s against a stalled state server with --state-timeout 5s", took)
	}
}

// TestFailureReportEventsByObject: a failed rollout's report lists the events of the
// Deployment, its ReplicaSet and the pod each under the object they are about; the
// Deployment's "Scaled up replica set …" is not shown as the pod's.
func TestFailureReportEventsByObject(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "evobj", rolloutFile("5m", ""), "web")
	g.MustRun(0, "apply", "--yes")
	g.roWriteGroupFile(rolloutFile("5m", "env: {SLIPWAY_DEV_POD: crashloop}"))
	r, _ := g.roApplyFails()

	sections := map[string][]string{} // "pod web-…" → its event lines
	var current string
	for _, line := range strings.Split(r.Stderr, "\n") {
		if obj, ok := strings.CutPrefix(line, "  events of "); ok {
			current = strings.TrimSuffix(obj, ":")
			sections[current] = nil
			continue
		}
		if current != "" && strings.HasPrefix(line, "    ") {
			sections[current] = append(sections[current], strings.TrimSpace(line))
			continue
		}
		current = ""
	}
	var pod string
	for obj := range sections {
		if strings.HasPrefix(obj, "pod web-") {
			pod = obj
		}
	}
	if pod == "" || len(sections["deployment web"]) == 0 {
		t.Fatalf("the failure report has no events of deployment web and of the failed pod: sections %v\n%s", sections, r)
	}
	for obj, lines := range sections {
		for _, l := range lines {
			if strings.HasPrefix(l, "ScalingReplicaSet:") && obj != "deployment web" {
				t.Errorf("%q listed under %s, want it under deployment web\n%s", l, obj, r)
			}
		}
	}
}
