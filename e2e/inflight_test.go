package e2e

// Issue 11 items 1 and 2: a rollout interrupted (SIGINT, SIGTERM, SIGKILL + `state unlock`)
// in an apply or a resume, and a template applied while the group is suspended, are followed
// by the next apply (or the resume): it waits for them and rolls them back when they fail, and
// plan never says `No changes.` in between.

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"slipway.dev/slipway/internal/devcluster/devtest"
	"slipway.dev/slipway/internal/state"
)

// inflightGroup is tinyGroup with {{ENV}} for its env line.
const inflightGroup = tinyGroup + "    {{ENV}}\n"

func inflightFile(env string) string {
	if env == "" {
		env = "env: {TZ: UTC}"
	}
	return strings.ReplaceAll(inflightGroup, "{{ENV}}", env)
}

// inflight is one group of the test: the tiny group applied ready, then made to run the
// never-ready template (with a new image too when image is set).
type inflight struct {
	*Group
	image bool
	good  corev1.PodTemplateSpec // the template that ran ready
	// digest is the image digest that ran ready.
	digest string
}

func newInflight(t *testing.T, prefix string, image bool) *inflight {
	g := &inflight{Group: NewGroup(t, prefix, inflightFile(""), "solo"), image: image}
	g.MustRun(0, "apply", "--yes")
	g.roRequireReady("solo", 1)
	g.good = g.roDeployment("solo").Spec.Template
	g.digest = g.State().State.Nodes["solo"].Image.Digest
	return g
}

// writeNeverReady writes the never-ready group file, and a new file in the rootfs for an
// image change.
func (g *inflight) writeNeverReady() {
	g.roWriteGroupFile(inflightFile(neverReadyEnv))
	if g.image {
		g.WriteFile("nodes/solo/rootfs/etc/motd", "never ready\n")
	}
}

// start runs slipway with args in the background.
func (g *inflight) start(ctx context.Context, args ...string) *exec.Cmd {
	g.t.Helper()
	cmd := g.Command(ctx, args...)
	if err := cmd.Start(); err != nil {
		g.t.Fatal(err)
	}
	return cmd
}

// waitFor waits for cond until ctx's deadline, failing the test then.
func (g *inflight) waitFor(ctx context.Context, what string, cond func() bool) {
	g.t.Helper()
	limit := time.Minute
	if d, ok := ctx.Deadline(); ok {
		limit = time.Until(d)
	}
	devtest.WaitFor(g.t, limit, what, func() (bool, string) { return cond(), "not yet" })
}

// neverReadyLive reports whether the solo Deployment has the never-ready template.
func (g *inflight) neverReadyLive() bool {
	return roEnv(g.roDeployment("solo").Spec.Template.Spec.Containers[0], "SLIPWAY_DEV_POD") == "never-ready"
}

// interrupt stops cmd with sig; SIGKILL is followed by `state unlock`, as an operator does.
func (g *inflight) interrupt(cmd *exec.Cmd, sig syscall.Signal) {
	g.t.Helper()
	if sig == syscall.SIGKILL {
		g.killAndUnlock(cmd)
		return
	}
	if err := cmd.Process.Signal(sig); err != nil {
		g.t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil {
		g.t.Fatalf("slipway %v exited 0 after %s", cmd.Args[1:], sig)
	}
	if l := g.State().Lock; l != nil {
		g.t.Fatalf("lock %s left after %s", l.ID, sig)
	}
}

// requireStatusNotReady checks that status does not call the never-ready template ready.
func (g *inflight) requireStatusNotReady() {
	g.t.Helper()
	if st := g.roStatus(); len(st.Nodes) != 1 || st.Nodes[0].LastRollout == nil || st.Nodes[0].LastRollout.Result == "ready" && g.neverReadyLive() {
		g.t.Errorf("status calls the never-ready template ready: %+v", st.Nodes)
	}
}

// requireFollowed checks the promise of SPEC §6 after an interruption: plan does not say
// `No changes.` and names the rollout it follows; the next apply waits for the never-ready
// rollout, rolls it back to the template that ran ready and fails; the node is then Ready on
// that template, and plan still shows the change the file asks for.
func (g *inflight) requireFollowed(planWants string) {
	g.t.Helper()
	p := g.Run("plan", "--detailed-exitcode")
	if p.Code != 2 || !strings.Contains(p.Stdout, planWants) {
		g.t.Errorf("plan after the interruption: want exit 2 and %q, got %s", planWants, p)
	}
	r := g.Run("apply", "--yes", "--timeout", neverReadyLimit)
	wantErr := regexp.MustCompile(`(?m)^error: node solo: deployment solo: rollout failed: NotReady: pod solo-\S+: container node: did not become ready within ` + neverReadyLimit + `: .+; rolled back to ` + regexp.QuoteMeta(g.digest) + `$`)
	if r.Code != 1 || !wantErr.MatchString(r.Stderr) {
		g.t.Fatalf("apply after the interruption: want exit 1 and the error %s, got %s", wantErr, r)
	}
	g.roRequireReady("solo", 1)
	if d := cmp.Diff(g.good, g.roDeployment("solo").Spec.Template); d != "" {
		g.t.Errorf("solo is not back on the template that ran ready (-want +got):\n%s", d)
	}
	if lr := g.State().State.Nodes["solo"].LastRollout; lr == nil || lr.Result != "rolled-back" || lr.Digest != g.digest {
		g.t.Errorf("state: last rollout %+v, want rolled-back to %s", lr, g.digest)
	}
	if p := g.Run("plan", "--detailed-exitcode"); p.Code != 2 {
		g.t.Errorf("plan after the rollback (the file still wants the never-ready template): want exit 2, got %s", p)
	}
}

var inflightSignals = []struct {
	name string
	sig  syscall.Signal
}{{"sigint", syscall.SIGINT}, {"sigterm", syscall.SIGTERM}, {"sigkill", syscall.SIGKILL}}

var inflightChanges = []struct {
	name  string
	image bool
}{{"env", false}, {"image", true}}

// Item 1: an apply interrupted while its never-ready rollout runs: SIGINT and SIGTERM set it
// back at once (issue 35 item 14), SIGKILL leaves it in flight for the next apply.
func TestInflightApplyInterrupted(t *testing.T) {
	t.Parallel()
	for _, sg := range inflightSignals {
		for _, ch := range inflightChanges {
			t.Run(sg.name+"/"+ch.name, func(t *testing.T) {
				t.Parallel()
				g := newInflight(t, "if-"+sg.name+"-"+ch.name, ch.image)
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				g.writeNeverReady()
				cmd := g.start(ctx, "apply", "--yes", "--timeout", "60s")
				g.waitFor(ctx, "the apply applies the never-ready template", g.neverReadyLive)
				g.interrupt(cmd, sg.sig)
				g.requireStatusNotReady()
				if sg.sig == syscall.SIGKILL {
					g.requireFollowed("a rollout was interrupted")
					return
				}
				// Issue 35 item 14: a signal is a stop asked, not a kill: the rollout, not
				// ready, was set back at once to the template that ran ready.
				g.roRequireReady("solo", 1)
				if d := cmp.Diff(g.good, g.roDeployment("solo").Spec.Template); d != "" {
					t.Errorf("after %s, solo is not back on the template that ran ready (-want +got):\n%s", sg.name, d)
				}
				if lr := g.State().State.Nodes["solo"].LastRollout; lr == nil || lr.Result != "rolled-back" || lr.Digest != g.digest {
					t.Errorf("state after %s: last rollout %+v, want rolled-back to %s", sg.name, lr, g.digest)
				}
				g.requireFollowed("")
			})
		}
	}
}

// Item 2: an apply while suspended changes the template but records nothing as ready; resume
// rolls it out and waits like an apply, rolling it back when it fails; a resume interrupted
// while it waits is followed by the next apply.
func TestInflightSuspendedApply(t *testing.T) {
	t.Parallel()
	sigs := append([]struct {
		name string
		sig  syscall.Signal
	}{{"none", 0}}, inflightSignals...)
	for _, sg := range sigs {
		for _, ch := range inflightChanges {
			t.Run(sg.name+"/"+ch.name, func(t *testing.T) {
				t.Parallel()
				g := newInflight(t, "is-"+sg.name+"-"+ch.name, ch.image)
				readyTemplate := g.State().State.Nodes["solo"].ReadyTemplate
				g.MustRun(0, "suspend", "--yes")
				g.writeNeverReady()
				g.MustRun(0, "apply", "--yes")
				if !g.neverReadyLive() || *g.roDeployment("solo").Spec.Replicas != 0 {
					t.Fatalf("apply while suspended: want the never-ready template at 0 replicas")
				}
				st := g.State().State.Nodes["solo"]
				if st.ReadyTemplate != readyTemplate || st.LastRollout == nil || st.LastRollout.Result == "ready" {
					t.Errorf("state after an apply while suspended: ready template %s (was %s), last rollout %+v: want nothing recorded as ready", st.ReadyTemplate, readyTemplate, st.LastRollout)
				}
				if s := g.MustRun(0, "status"); regexp.MustCompile(`(?m)^  solo: ready `).MatchString(s.Stdout) {
					t.Errorf("status calls a template that never ran ready:\n%s", s)
				}
				p := g.MustRun(0, "plan")
				if !strings.Contains(p.Stdout, "resume rolls it out") {
					t.Errorf("plan while suspended does not say that resume rolls the new template out:\n%s", p)
				}

				if sg.sig == 0 {
					r := g.Run("resume", "--yes", "--timeout", neverReadyLimit)
					if r.Code != 1 || !strings.Contains(r.Stderr, "; rolled back to "+g.digest) {
						t.Fatalf("resume of a never-ready template: want exit 1 and a rollback to %s, got %s", g.digest, r)
					}
					g.roRequireReady("solo", 1)
					if d := cmp.Diff(g.good, g.roDeployment("solo").Spec.Template); d != "" {
						t.Errorf("solo after the failed resume is not on the template that ran ready (-want +got):\n%s", d)
					}
					if p := g.Run("plan", "--detailed-exitcode"); p.Code != 2 {
						t.Errorf("plan after the failed resume: want exit 2, got %s", p)
					}
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				cmd := g.start(ctx, "resume", "--yes", "--timeout", "60s")
				g.waitFor(ctx, "the resume scales solo up", func() bool { return *g.roDeployment("solo").Spec.Replicas == 1 })
				g.interrupt(cmd, sg.sig)
				g.requireStatusNotReady()
				if sg.sig == syscall.SIGKILL {
					g.requireFollowed("a rollout was interrupted")
					return
				}
				// Issue 35 item 14: a signal is a stop asked, not a kill: the rollout, not
				// ready, was set back at once to the template that ran ready.
				g.roRequireReady("solo", 1)
				if d := cmp.Diff(g.good, g.roDeployment("solo").Spec.Template); d != "" {
					t.Errorf("after %s, solo is not back on the template that ran ready (-want +got):\n%s", sg.name, d)
				}
				if lr := g.State().State.Nodes["solo"].LastRollout; lr == nil || lr.Result != "rolled-back" || lr.Digest != g.digest {
					t.Errorf("state after %s: last rollout %+v, want rolled-back to %s", sg.name, lr, g.digest)
				}
				g.requireFollowed("")
			})
		}
	}
}

// A node whose pods are not ready with a state that says nothing of it (written by a slipway
// without the in-flight marker, or a pod that stopped being ready) is no `No changes.` either:
// plan reads the live readiness, and apply follows the rollout and rolls it back.
func TestInflightNotReadyWithoutRecord(t *testing.T) {
	t.Parallel()
	g := newInflight(t, "if-norecord", false)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	g.writeNeverReady()
	cmd := g.start(ctx, "apply", "--yes", "--timeout", "60s")
	g.waitFor(ctx, "the apply applies the never-ready template", g.neverReadyLive)
	g.interrupt(cmd, syscall.SIGKILL)

	// The state as an older slipway left it: the last rollout ready.
	path := filepath.Join(g.Dir, state.DefaultPath(g.Name))
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(doc), `"result": "in-progress"`, `"result": "ready"`, 1)
	if edited == string(doc) {
		t.Fatalf("state %s: no rollout in flight after the kill:\n%s", path, doc)
	}
	g.WriteFile(state.DefaultPath(g.Name), edited)
	g.requireFollowed("it is not ready (0 of 1 pods ready")
}
