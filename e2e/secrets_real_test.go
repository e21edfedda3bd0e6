package e2e

// Issue 36 on the real node: a service role's secrets sidecar and companion run in containerd,
// not kwok, so the startup probe's gate, the restart signal and the companion's independence
// are the kubelet's and the kernel's, not a simulation's.

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	corev1 "k8s.io/api/core/v1"

	"slipway.dev/slipway/internal/devcluster"
	"slipway.dev/slipway/internal/devcluster/devtest"
)

// serviceUID is the user of the service images the real-node tests build: the service
// container must not run as root (FR-004d).
const serviceUID = "65532"

// writeServiceArchive writes build/<file> under g's directory: a docker archive of a busybox
// tree running as serviceUID, with /bin/companion the script companion (a shell script, so
// its process's argv[0] is /bin/sh, never the service's command).
func (g *Group) writeServiceArchive(file, companion string) {
	g.writeServiceArchiveWith(file, companion, nil, nil)
}

// writeServiceArchiveWith is writeServiceArchive with the image's entrypoint and more files
// (path in the tree → content, executable).
func (g *Group) writeServiceArchiveWith(file, companion string, entrypoint []string, files map[string]string) {
	g.t.Helper()
	root := filepath.Join(g.Dir, "build", "rootfs-"+file)
	if err := devcluster.BusyboxRootfs(context.Background(), root); err != nil {
		g.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "bin", "companion"), []byte("#!/bin/sh\n"+companion+"\n"), 0o755); err != nil {
		g.t.Fatal(err)
	}
	for p, content := range files {
		if err := os.WriteFile(filepath.Join(root, p), []byte(content), 0o755); err != nil {
			g.t.Fatal(err)
		}
	}
	layer, err := devcluster.TreeLayer(root, root+".layer.tar.gz")
	if err != nil {
		g.t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err == nil {
		img, err = mutate.Config(img, v1.Config{User: serviceUID, Entrypoint: entrypoint, Env: []string{"PATH=/bin:/sbin:/usr/bin:/usr/sbin"}})
	}
	if err != nil {
		g.t.Fatal(err)
	}
	tag, err := name.NewTag("example.org/sso:e2e")
	if err != nil {
		g.t.Fatal(err)
	}
	if err := tarball.WriteToFile(filepath.Join(g.Dir, "build", file), tag, img); err != nil {
		g.t.Fatal(err)
	}
}

// execIn runs command in container of pod (kubectl exec) and returns its stdout and whether
// it exited 0; stderr joins stdout when it failed, so a test can say why.
func (g *Group) execIn(pod, container string, command ...string) (string, bool) {
	g.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	args := append([]string{"--kubeconfig", g.Env.Kubeconfig, "-n", g.Name, "exec", pod, "-c", container, "--"}, command...)
	cmd := exec.CommandContext(ctx, g.Env.Kubectl(), args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String() + errb.String(), false
	}
	return out.String(), true
}

// containerStatus is the status of container (init or not) in p, nil when it has none yet.
func containerStatus(p *corev1.Pod, container string) *corev1.ContainerStatus {
	for _, l := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for i := range l {
			if l[i].Name == container {
				return &l[i]
			}
		}
	}
	return nil
}

// companionCrashGroup is a service role on the real node whose companion exits at once, over
// and over; the service (busybox httpd on 8080) is ready when it listens.
const companionCrashGroup = `group: {{GROUP}}
nodes:
  web:
    image: {rootfs: nodes/web/rootfs, command: [/bin/sleep, "1000000"]}
    init: none
    rolloutTimeout: 2m
    {{REAL}}
    roles:
      sso:
        service: {image: {archive: build/sso.tar, command: [/usr/sbin/httpd, -f, -p, "8080", -h, /tmp]}}
        probes:
          startup: {tcp: 8080}
        companion: true
`

// TestRealCompanionCrashDoesNotFailRollout: a companion that exits at once, and again after
// each restart (a crash loop), is never a reason for a failed rollout (FR-004g): apply ends
// with the role ready while the kubelet counts the companion's restarts, and a second apply of
// a changed template (a Recreate) does too; plan says nothing is left to do.
func TestRealCompanionCrashDoesNotFailRollout(t *testing.T) {
	t.Parallel()
	g, node := NewRealGroup(t, "real-companion", companionCrashGroup, "web")
	g.writeServiceArchive("sso.tar", `echo "companion starts and fails" >&2; exit 3`)
	g.MustRun(0, "apply", "--yes")
	pod := g.realPod("web-sso", node)
	devtest.WaitFor(t, 2*time.Minute, "the companion to have failed and restarted", func() (bool, string) {
		p := g.realPod("web-sso", node)
		cs := containerStatus(&p, "companion")
		if cs == nil {
			return false, "no status yet"
		}
		return cs.RestartCount >= 1, cs.State.String()
	})
	p := g.realPod("web-sso", node)
	g.logPodStart(&pod)
	if p.Name != pod.Name {
		t.Errorf("the role's pod changed from %s to %s: a failing companion must not replace it", pod.Name, p.Name)
	}
	if svc := containerStatus(&p, "service"); svc == nil || !svc.Ready || svc.RestartCount != 0 {
		t.Errorf("service container %+v: want ready, never restarted", svc)
	}
	// A second apply of another template replaces the pod and succeeds as well.
	g.realWriteGroup(strings.Replace(companionCrashGroup, "probes:", "env: {LEVEL: two}\n        probes:", 1))
	if r := g.MustRun(0, "apply", "--yes"); !strings.Contains(r.Stdout+r.Stderr, "web-sso") {
		t.Errorf("second apply does not mention the role:\n%s", r)
	}
	if plan := g.MustRun(0, "plan"); !strings.Contains(plan.Stdout, "No changes.") {
		t.Errorf("plan after the applies, the companion still failing:\n%s", plan)
	}
}

// logPodStart logs, for BENCHMARKS.md, the times from p's creation to its containers' starts
// and to its Ready condition (the API's timestamps, whole seconds).
func (g *Group) logPodStart(p *corev1.Pod) {
	g.t.Helper()
	at := func(cs *corev1.ContainerStatus) string {
		if cs == nil || cs.State.Running == nil {
			return "not running"
		}
		return cs.State.Running.StartedAt.Sub(p.CreationTimestamp.Time).String()
	}
	ready := "not ready"
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			ready = c.LastTransitionTime.Sub(p.CreationTimestamp.Time).String()
		}
	}
	g.t.Logf("bench: pod %s created → sidecar started %s, service started %s, companion started %s, pod Ready %s",
		p.Name, at(containerStatus(p, "secrets")), at(containerStatus(p, "service")), at(containerStatus(p, "companion")), ready)
}
