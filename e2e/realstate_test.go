package e2e

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// realStateGroup is an `init: none` node on the real node with a state version;
// {{VERSION}}, {{PORT}} (where it serves; readiness asks 8080) and {{MIGRATE}} (shell run
// before it serves: the release's migration of /var/lib) vary by release.
const realStateGroup = `group: {{GROUP}}
nodes:
  app:
    image:
      rootfs: nodes/app/rootfs
      command: [/bin/sh, -c, 'trap "exit 0" TERM; {{MIGRATE}} httpd -f -p {{PORT}} -h /tmp & wait']
    init: none
    readiness: {tcp: 8080}
    rolloutTimeout: 40s
    stopGracePeriod: 5s
    state: {size: 1Gi, version: "{{VERSION}}"}
    firewall: {served: [8080]}
    {{REAL}}
`

func realStateFile(version, port, migrate string) string {
	return strings.NewReplacer("{{VERSION}}", version, "{{PORT}}", port, "{{MIGRATE}}", migrate).Replace(realStateGroup)
}

// realMigrate is the v2 release's migration: it rewrites one file, removes one and adds one.
const realMigrate = `echo migrated > /var/lib/db/a; rm -f /var/lib/db/b; echo new > /var/lib/db/c;`

// realTree lists /var/lib of pod, slipway's own directory aside: each entry's type, mode,
// owner, size and, for files, content hash; links with their target.
func (g *Group) realTree(pod string) []string {
	g.t.Helper()
	out := g.exec(pod, "sh", "-c", `cd /var/lib && find . -path ./.slipway-state -prune -o -print | sort | while read -r p; do
  if [ -L "$p" ]; then echo "$p link $(readlink "$p")";
  elif [ -f "$p" ]; then echo "$p $(stat -c '%F %a %u:%g %s' "$p") $(md5sum < "$p" | cut -d' ' -f1)";
  else echo "$p $(stat -c '%F %a %u:%g' "$p")"; fi; done`)
	return strings.Split(strings.TrimSpace(out), "\n")
}

// TestRealStateMigration (SPEC §6a) on the real node's claim, run by the slipway-state init
// container for real: a failed release at a new state version (its migration changed the
// data, its pod never became ready) is set back and its data is put back exactly as it was;
// the same version in a release that runs ready keeps the migrated data and the copy goes.
func TestRealStateMigration(t *testing.T) {
	t.Parallel()
	g, node := NewRealGroup(t, "real-migrate", realStateFile("1", "8080", ""), "app")
	g.MustRun(0, "apply", "--yes")
	pod := g.realPod("app", node)
	g.exec(pod.Name, "sh", "-c", `mkdir -p /var/lib/db/sub && echo one > /var/lib/db/a && echo two > /var/lib/db/b &&
echo deep > /var/lib/db/sub/d && chmod 600 /var/lib/db/b && ln -s a /var/lib/db/link && chown 1000:1000 /var/lib/db/sub/d`)
	before := g.realTree(pod.Name)
	if len(before) < 6 {
		t.Fatalf("/var/lib before the migration: %v", before)
	}

	// v2 migrates, then never becomes ready (it serves on 8081).
	g.realWriteGroup(realStateFile("2", "8081", realMigrate))
	r, _ := g.roApplyFails()
	if !strings.Contains(r.Stderr, "rolled back to") {
		t.Fatalf("apply of the failing v2 did not roll back:\n%s", r)
	}
	g.roRequireReady("app", 1)
	pod = g.realPod("app", node)
	if !slices.ContainsFunc(pod.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == "slipway-state" }) {
		t.Errorf("the rolled-back pod has no slipway-state init container: %v", pod.Spec.InitContainers)
	}
	if diff := cmp.Diff(before, g.realTree(pod.Name)); diff != "" {
		t.Errorf("/var/lib after the failed release was set back (-before +after):\n%s", diff)
	}
	if got := g.exec(pod.Name, "cat", "/var/lib/.slipway-state/version"); strings.TrimSpace(got) != "1" {
		t.Errorf("the data is handed to version %q after the restore, want 1", got)
	}

	// v2 again, now serving on 8080: it runs ready on the migrated data; the copy is removed.
	g.realWriteGroup(realStateFile("2", "8080", realMigrate))
	g.MustRun(0, "apply", "--yes")
	pod = g.realPod("app", node)
	if got := g.exec(pod.Name, "sh", "-c", "cat /var/lib/db/a /var/lib/db/c; test -e /var/lib/db/b && echo b-is-there; echo $(cat /var/lib/.slipway-state/version); test -e /var/lib/.slipway-state/copy && echo copy-is-there; true"); got != "migrated\nnew\n2\n" {
		t.Errorf("after the v2 release ran ready: data, version and slipway's files %q, want migrated, new, no b, version 2 and no copy", got)
	}
}

// stopSignalGroup is an `init: systemd` node (the stop signal slipway gives such nodes) whose
// program records the signal it gets on its claim; it runs where systemd cannot, so the test
// proves the signal even on this cgroup v1 machine. {{N}} changes the pod template.
const stopSignalGroup = `group: {{GROUP}}
nodes:
  app:
    image:
      rootfs: nodes/app/rootfs
      command: [/bin/sh, -c, 'cat /var/lib/stop-signal 2>/dev/null > /tmp/previous; trap "echo got-RTMIN+3 > /var/lib/stop-signal; exit 0" 37; trap "echo got-TERM > /var/lib/stop-signal; exit 0" TERM; while :; do sleep 1; done']
    init: systemd
    readiness: {exec: [test, -e, /tmp/previous]}
    stopGracePeriod: 20s
    state: {size: 1Gi}
    env: {RELEASE: "{{N}}"}
    {{REAL}}
`

// TestRealStopSignal: the container of an `init: systemd` node gets SIGRTMIN+3, seen by the
// next pod in what the program recorded on its claim. On a dev cluster started with
// --feature-gates ContainerStopSignals=true (its API server and the real node's kubelet) the
// pod names it (lifecycle.stopSignal); on one without the gate (the test command's: the
// contract tests of a cluster that drops the field need it so) the plan leaves the field out
// and containerd sends the image config's StopSignal, which slipway sets for init: systemd.
// Before slipway set it, the gate-less cluster sent SIGTERM, on which systemd does not stop
// (seen on the real node, 2026-12-05).
func TestRealStopSignal(t *testing.T) {
	t.Parallel()
	g, node := NewRealGroup(t, "real-stop", strings.ReplaceAll(stopSignalGroup, "{{N}}", "1"), "app")
	gated := slices.Contains(g.Env.FeatureGates, "ContainerStopSignals=true")
	g.MustRun(0, "apply", "--yes")
	d := g.roDeployment("app")
	lc := d.Spec.Template.Spec.Containers[0].Lifecycle
	hasRTMIN := lc != nil && lc.StopSignal != nil && *lc.StopSignal == corev1.SIGRTMINPLUS3
	if hasRTMIN != gated {
		t.Fatalf("cluster gates %q: the node's container has lifecycle %+v, want stopSignal SIGRTMIN+3 only with ContainerStopSignals", g.Env.FeatureGates, lc)
	}
	first := g.realPod("app", node)
	g.realWriteGroup(strings.ReplaceAll(stopSignalGroup, "{{N}}", "2"))
	g.MustRun(0, "apply", "--yes")
	next := g.realPod("app", node)
	if next.Name == first.Name {
		t.Fatalf("pod %s was not replaced", first.Name)
	}
	if got := g.exec(next.Name, "cat", "/tmp/previous"); got != "got-RTMIN+3\n" {
		t.Errorf("cluster gates %q: the stopped pod recorded %q, want got-RTMIN+3", g.Env.FeatureGates, got)
	}
}
