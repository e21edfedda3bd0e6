package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/watch"

	"slipway.dev/slipway/internal/devcluster/devtest"
)

// realSystemdGroup is one `init: systemd` node on the real node, Debian bookworm from the dev
// registry's base image with units added from nodes/web/systemd, and /etc/release from
// nodes/web/release (a new release is a new image).
const realSystemdGroup = `group: {{GROUP}}
runtimeClassName: systemd
nodes:
  web:
    image:
      base: ${K8S_REGISTRY}/slipway-dev/debian:bookworm-systemd
      add:
        - {src: nodes/web/systemd, dst: /etc/systemd/system}
        - {src: nodes/web/release, dst: /etc/release}
    rolloutTimeout: 90s
    stopGracePeriod: {{GRACE}}
    state: {size: 1Gi}
    {{REAL}}
`

// realSystemdGrace is the node's stopGracePeriod: long enough for a clean shutdown on a loaded
// machine, short beside what the kubelet waits for a systemd that ignores its signal (all of
// it).
const realSystemdGrace = 40 * time.Second

// stopMarkerUnit runs from boot to shutdown and, stopped, copies /etc/release to
// /var/lib/stop-marker: the next pod finds there which release shut down cleanly.
const stopMarkerUnit = `[Unit]
Description=records a clean stop on the claim
RequiresMountsFor=/var/lib

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/true
ExecStop=/bin/cp /etc/release /var/lib/stop-marker

[Install]
WantedBy=multi-user.target
`

// brokenUnit fails at boot: systemd then says `degraded`.
const brokenUnit = `[Unit]
Description=fails on purpose

[Service]
Type=oneshot
ExecStart=/bin/false

[Install]
WantedBy=multi-user.target
`

// realSystemdRelease writes release n's files: the marker unit, enabled; with broken, the
// failing unit too.
func (g *Group) realSystemdRelease(n string, broken bool) {
	g.t.Helper()
	g.WriteFile("nodes/web/release", n+"\n")
	units := map[string]string{"stop-marker.service": stopMarkerUnit}
	if broken {
		units["broken.service"] = brokenUnit
	}
	for name, unit := range units {
		g.WriteFile("nodes/web/systemd/"+name, unit)
		g.symlink("../"+name, "nodes/web/systemd/multi-user.target.wants/"+name)
	}
}

// symlink makes the link rel (under the group's directory) to target, replacing one there.
func (g *Group) symlink(target, rel string) {
	g.t.Helper()
	p := filepath.Join(g.Dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		g.t.Fatal(err)
	}
	_ = os.Remove(p)
	if err := os.Symlink(target, p); err != nil {
		g.t.Fatal(err)
	}
}

// TestRealSystemd: a systemd node on the real node, released three times.
//   - Release 2 replaces the pod: the old one shuts down cleanly within the grace period (its
//     unit's ExecStop wrote the marker the new pod finds, and the pod went well before the
//     grace ended), a file written under /var/lib is still there, and /etc/machine-id stays the
//     state's machine ID.
//   - Release 3 has a unit that fails (`degraded`, never Ready): apply sets the Deployment back,
//     release 2 runs Ready again, and the error names the failed unit.
func TestRealSystemd(t *testing.T) {
	t.Parallel()
	tmpl := strings.ReplaceAll(realSystemdGroup, "{{GRACE}}", realSystemdGrace.String())
	g, node := NewRealGroup(t, "real-systemd", tmpl)
	g.realSystemdRelease("1", false)
	g.MustRun(0, "apply", "--yes")
	g.roRequireReady("web", 1)
	first := g.realPod("web", node)
	machineID := strings.ReplaceAll(g.roState().State.Nodes["web"].MachineID, "-", "") + "\n"
	if got := g.exec(first.Name, "cat", "/etc/machine-id"); got != machineID {
		t.Fatalf("release 1: /etc/machine-id is %q, want the state's machine ID %q", got, machineID)
	}
	g.exec(first.Name, "sh", "-c", "echo kept > /var/lib/kept")

	// Release 2: a new image, a new pod.
	g.realSystemdRelease("2", false)
	stop := watchPods(t, g)
	g.MustRun(0, "apply", "--yes")
	events := stop()
	second := g.realPod("web", node)
	if second.Name == first.Name {
		t.Fatalf("pod %s was not replaced", first.Name)
	}
	took := stopTook(t, events, first.Name)
	t.Logf("pod %s: from its deletion to its end %s (grace %s)", first.Name, took, realSystemdGrace)
	if took > realSystemdGrace/2 {
		t.Errorf("pod %s took %s to stop, want well within its grace period %s (a clean shutdown, not a kill at the end)", first.Name, took, realSystemdGrace)
	}
	for _, c := range []struct{ file, want, what string }{
		{"/var/lib/stop-marker", "1\n", "the marker of release 1's clean stop"},
		{"/var/lib/kept", "kept\n", "the file written under /var/lib"},
		{"/etc/machine-id", machineID, "the state's machine ID"},
	} {
		if got := g.exec(second.Name, "cat", c.file); got != c.want {
			t.Errorf("release 2: %s is %q, want %s %q", c.file, got, c.what, c.want)
		}
	}
	if got := g.exec(second.Name, "systemctl", "is-system-running"); got != "running\n" {
		t.Errorf("release 2: systemctl is-system-running says %q, want running", got)
	}

	// Release 3: degraded, never Ready; set back to release 2.
	before := g.roDeployment("web")
	digest := g.roState().State.Nodes["web"].Image.Digest
	g.realSystemdRelease("3", true)
	r, took := g.roApplyFails()
	t.Logf("the failed apply took %s:\n%s", took, r.Stderr)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`NotReady: pod web-\S+: container node: did not become ready within 1m30s`),
		regexp.MustCompile(`Readiness probe failed: system degraded broken\.service +loaded +failed +failed +fails on purpose`),
		regexp.MustCompile(`rolled back to ` + regexp.QuoteMeta(digest)),
	} {
		if !want.MatchString(r.Stderr) {
			t.Errorf("apply's error does not match %s:\n%s", want, r)
		}
	}
	if diff := cmp.Diff(before.Spec.Template, g.roDeployment("web").Spec.Template); diff != "" {
		t.Errorf("deployment web after the rollback: template differs (-before +after):\n%s", diff)
	}
	devtest.WaitFor(t, 2*time.Minute, "the failed pod gone", func() (bool, string) {
		pods := g.roPods("web")
		return len(pods) == 1, "pods " + strings.Join(roPodNames(pods), " ")
	})
	g.roRequireReady("web", 1)
	back := g.realPod("web", node)
	if got := g.exec(back.Name, "cat", "/etc/release"); got != "2\n" {
		t.Errorf("after the rollback: /etc/release is %q, want release 2's", got)
	}
	if got := g.exec(back.Name, "systemctl", "is-system-running"); got != "running\n" {
		t.Errorf("after the rollback: systemctl is-system-running says %q, want running", got)
	}
	if got := g.exec(back.Name, "cat", "/etc/machine-id"); got != machineID {
		t.Errorf("after the rollback: /etc/machine-id is %q, want the state's machine ID %q", got, machineID)
	}
}

// stopTook is how long pod took from its deletion (the first event that shows it terminating)
// to its end (its phase ended, or the object gone).
func stopTook(t *testing.T, events []podEvent, pod string) time.Duration {
	t.Helper()
	var deleting, ended time.Time
	for _, e := range events {
		if e.pod != pod {
			continue
		}
		if deleting.IsZero() && e.deleting {
			deleting = e.at
		}
		if !deleting.IsZero() && (e.ended || e.typ == watch.Deleted) {
			ended = e.at
			break
		}
	}
	if deleting.IsZero() || ended.IsZero() {
		t.Fatalf("pod %s: no deletion (%v) or end (%v) among %d events", pod, deleting, ended, len(events))
	}
	return ended.Sub(deleting)
}
