package e2e

// Issue 38: waves files. One test drives a file through its life: apply in order, a second
// apply that changes nothing, a dependency whose rollout is set back, SIGKILL mid-wave, destroy.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// waveGroup is one node; {{ENV}} is its env, {{TRIAL}} forces a change.
const waveGroup = `group: {{NAME}}
defaults:
  state: {size: 1Gi}
  rolloutTimeout: 20s
nodes:
  web:
    app: front
    image: {rootfs: nodes/web/rootfs}
    env: {TRIAL: "{{TRIAL}}"{{ENV}}}
    firewall: {served: [80]}
  db:
    app: data
    image: {rootfs: nodes/web/rootfs}
    init: none
    env: {TRIAL: "{{TRIAL}}"}
    firewall: {served: [5432]}
`

// The file: base <- mid <- {app-front, app-data}; ind alone.
const wavesFile = `groups:
  - {name: app-front, file: app/slipway.yaml, target: front, dependsOn: [mid]}
  - {name: app-data, file: app/slipway.yaml, target: data, dependsOn: [mid]}
  - {name: mid, file: mid/slipway.yaml, dependsOn: [base]}
  - {name: base, file: base/slipway.yaml}
  - {name: ind, file: ind/slipway.yaml}
`

type waveSetup struct {
	g      *Group
	prefix string
}

// namespaces of each entry of the file.
func (w waveSetup) namespaces() map[string]string {
	return map[string]string{
		"base": w.prefix + "-base", "mid": w.prefix + "-mid", "ind": w.prefix + "-ind",
		"app-front": w.prefix + "-app-front", "app-data": w.prefix + "-app-data",
	}
}

// states are the state names of the entries: the deployment identity, the group or
// group.app for a target (issue 46), never the namespace's group-app.
func (w waveSetup) states() []string {
	return []string{w.prefix + "-base", w.prefix + "-mid", w.prefix + "-ind", w.prefix + "-app.front", w.prefix + "-app.data"}
}

// write writes every group file with trial, and mid's node web with midEnv.
func (w waveSetup) write(trial int, midEnv string) {
	for _, dir := range []string{"base", "mid", "app", "ind"} {
		env := ""
		if dir == "mid" {
			env = midEnv
		}
		w.g.WriteFile(dir+"/slipway.yaml", strings.NewReplacer("{{NAME}}", w.prefix+"-"+dir, "{{TRIAL}}", fmt.Sprint(trial), "{{ENV}}", env).Replace(waveGroup))
		w.g.WriteFile(dir+"/nodes/web/rootfs/etc/hostname", "web\n")
	}
}

// created is the creation time of Deployment name in ns.
func (w waveSetup) created(ns, name string) time.Time {
	w.g.t.Helper()
	d, err := w.g.Kube.Clientset.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		w.g.t.Fatalf("Deployment %s/%s: %v", ns, name, err)
	}
	return d.CreationTimestamp.Time
}

// waveEvent is one JSON event line.
type waveEvent struct {
	Time    time.Time `json:"time"`
	Group   string    `json:"group"`
	Node    string    `json:"node"`
	Phase   string    `json:"phase"`
	Message string    `json:"message"`
}

func parseEvents(t *testing.T, out string) []waveEvent {
	t.Helper()
	var evs []waveEvent
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var e waveEvent
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("event line %q: %v", line, err)
		}
		evs = append(evs, e)
	}
	return evs
}

// span is the first and the last event time of each group.
func span(evs []waveEvent) (first, last map[string]time.Time) {
	first, last = map[string]time.Time{}, map[string]time.Time{}
	for _, e := range evs {
		if e.Group == "" {
			continue
		}
		if _, ok := first[e.Group]; !ok {
			first[e.Group] = e.Time
		}
		last[e.Group] = e.Time
	}
	return first, last
}

func TestWaves(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "wv", "group: unused\nnodes: {}\n")
	w := waveSetup{g: g, prefix: g.Name}
	var all []string
	for _, ns := range w.namespaces() {
		all = append(all, ns)
	}
	g.dropNamespaces(all...)
	g.WriteFile("waves.yaml", wavesFile)
	w.write(1, "")

	// Apply: every group, in order.
	r := g.MustRun(0, "apply", "-f", "waves.yaml", "--yes", "-o", "json")
	first, last := span(parseEvents(t, r.Stdout))
	for dependent, dep := range map[string]string{"mid": "base", "app-front": "mid", "app-data": "mid"} {
		if !first[dependent].After(last[dep]) {
			t.Errorf("%s started at %s, before %s ended at %s", dependent, first[dependent], dep, last[dep])
		}
	}
	ns := w.namespaces()
	for dependent, dep := range map[string]string{"mid": "base", "app-front": "mid"} {
		if c, d := w.created(ns[dependent], "web"), w.created(ns[dep], "web"); c.Before(d) {
			t.Errorf("Deployment web of %s created at %s, before %s's at %s", dependent, c, dep, d)
		}
	}
	if c, d := w.created(ns["app-data"], "db"), w.created(ns["mid"], "web"); c.Before(d) {
		t.Errorf("Deployment db of app-data created at %s, before mid's web at %s", c, d)
	}

	// A second apply: No changes. for every group, and no write.
	proxy := g.CountRequests()
	r = g.MustRun(0, "apply", "-f", "waves.yaml", "--yes")
	for _, name := range []string{"base", "mid", "app-front", "app-data", "ind"} {
		if !strings.Contains(r.Stdout, name+": No changes.\n") {
			t.Errorf("second apply: no %q line:\n%s", name+": No changes.", r.Stdout)
		}
	}
	// A dry run stores nothing (an init: systemd group asks whether the cluster keeps a stop
	// signal); anything else would be a write.
	if writes := stored(proxy.Writes()); len(writes) != 0 {
		t.Errorf("second apply wrote %d time(s), first %+v", len(writes), writes[0])
	}
	g.Kubeconfig = g.Env.Kubeconfig
	if r := g.MustRun(0, "status", "-f", "waves.yaml"); strings.Contains(r.Stdout, "unhealthy") {
		t.Errorf("status after apply:\n%s", r.Stdout)
	}

	// mid's rollout is set back: its dependents stop, ind goes on.
	w.write(2, `, SLIPWAY_DEV_POD: never-ready`)
	r = g.MustRun(1, "apply", "-f", "waves.yaml", "--yes")
	for _, line := range []string{
		"app-front: not applied: it depends on mid, which failed",
		"app-data: not applied: it depends on mid, which failed",
		"mid: failed", "base: Apply complete", "ind: Apply complete",
	} {
		if !strings.Contains(r.Stdout, line) {
			t.Errorf("apply with mid set back: no %q:\n%s", line, r)
		}
	}
	if strings.Contains(r.Stderr, "group app-front: failed") {
		t.Errorf("a stopped group reported as a failure of its own:\n%s", r.Stderr)
	}
	if env := deploymentEnv(t, g, ns["app-front"], "web", "TRIAL"); env != "1" {
		t.Errorf("app-front's web has TRIAL=%q: applied after its dependency failed", env)
	}
	if env := deploymentEnv(t, g, ns["ind"], "web", "TRIAL"); env != "2" {
		t.Errorf("ind's web has TRIAL=%q, want 2: an independent group stopped", env)
	}
	st := g.MustRun(0, "status", "-f", "waves.yaml")
	if !strings.Contains(st.Stdout, "Group mid is not healthy") || !strings.Contains(st.Stdout, "it blocks app-front, app-data") {
		t.Errorf("status with mid set back:\n%s", st.Stdout)
	}

	// SIGKILL mid-wave, then apply: it converges.
	w.write(3, "")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := g.Command(ctx, "apply", "-f", "waves.yaml", "--yes", "-o", "json")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		var e waveEvent
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Group == "mid" && e.Phase == "rollout" {
			break
		}
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	for _, name := range w.states() {
		if v := g.stateOf(name); v.Lock != nil {
			g.MustRun(0, "state", "unlock", "--group", name, v.Lock.ID)
		}
	}
	g.MustRun(0, "apply", "-f", "waves.yaml", "--yes")
	g.MustRun(0, "plan", "-f", "waves.yaml", "--detailed-exitcode")
	for _, entry := range []string{"app-front", "mid", "ind"} {
		if env := deploymentEnv(t, g, ns[entry], "web", "TRIAL"); env != "3" {
			t.Errorf("after the kill and apply, %s's web has TRIAL=%q, want 3", entry, env)
		}
	}

	// destroy: every group, dependents first.
	r = g.MustRun(0, "destroy", "-f", "waves.yaml", "--yes", "-o", "json")
	first, last = span(parseEvents(t, r.Stdout))
	for dependent, dep := range map[string]string{"mid": "base", "app-front": "mid", "app-data": "mid"} {
		if !first[dep].After(last[dependent]) {
			t.Errorf("destroy: %s started at %s, before its dependent %s ended at %s", dep, first[dep], dependent, last[dependent])
		}
	}
	for entry, name := range ns {
		if _, err := g.Kube.Clientset.CoreV1().Namespaces().Get(context.Background(), name, metav1.GetOptions{}); err == nil {
			t.Errorf("destroy left namespace %s of %s", name, entry)
		}
	}
}

// deploymentEnv is the value of env var key in the first container of Deployment ns/name.
func deploymentEnv(t *testing.T, g *Group, ns, name, key string) string {
	t.Helper()
	d, err := g.Kube.Clientset.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Deployment %s/%s: %v", ns, name, err)
	}
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		if e.Name == key {
			return e.Value
		}
	}
	return ""
}
