// Command bench measures slipway's plan and apply side by side with kubectl and Helm on the
// dev cluster (issue 8):
//
//	go run ./bench -nodes 200 -json out.json
//
// It starts or reuses the dev cluster, writes a group of N nodes (each a Deployment, a claim, a
// ServiceAccount, a Service publishing port 80 and a NetworkPolicy, a tiny rootfs of its own),
// builds slipway once, and runs in one go:
//
//	slipway: first apply (until all Ready), no-op apply, plan, one node's rootfs changed, destroy
//	kubectl: apply --server-side + wait --for=condition=Available, no-op apply,
//	         diff --server-side, delete namespace (the objects of `slipway render`)
//	helm v4: install --wait, no-op upgrade --wait, uninstall --wait (a chart of the same objects)
//
// and the cluster's floor (first object created → last Deployment Available, from the objects'
// timestamps) of slipway's and kubectl's first apply. For every step it reports the wall time,
// the tool's own API requests by verb (counted at a proxy every tool talks through) and the
// API server's apiserver_request_total by verb before and after (the whole cluster: controllers
// and other clients included), and slipway's ratio to each peer. The bench is a command, part
// of no test run.
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slipway.dev/slipway/internal/devcluster"
	"slipway.dev/slipway/internal/devcluster/devtest"
	"slipway.dev/slipway/internal/kube"
)

const helmModule = "helm.sh/helm/v4/cmd/helm@v4.3.1"

const (
	nsSlipway = "bench-slipway"
	nsKubectl = "bench-kubectl"
	nsHelm    = "bench-helm"
	group     = "bench-slipway"
)

// Step is one measured command.
type Step struct {
	Tool        string  `json:"tool"`
	Step        string  `json:"step"`
	WallSeconds float64 `json:"wallSeconds"`
	// Requests are the tool's own API requests by verb, counted at the proxy it talks through
	// (LIST and WATCH told from GET by the URL; dry runs counted apart as "<VERB> dry-run").
	Requests map[string]int `json:"requests"`
	// Writes are the tool's own non-dry-run POST, PUT, PATCH, DELETE and DELETECOLLECTION.
	Writes int `json:"writes"`
	// Cluster is the change of apiserver_request_total by verb, dry runs excluded, over the
	// step: every client of the API server (controllers, kwok, other tests) included.
	Cluster map[string]int `json:"cluster"`
	Error   string         `json:"error,omitempty"`
}

// Ratio compares slipway with a peer on one step.
type Ratio struct {
	Step    string  `json:"step"`
	Peer    string  `json:"peer"`
	Slipway float64 `json:"slipwaySeconds"`
	Other   float64 `json:"peerSeconds"`
	Ratio   float64 `json:"ratio"` // slipway / peer
}

// Target is one goal of issue 8.
type Target struct {
	Goal  string `json:"goal"`
	Value string `json:"value"`
	Met   bool   `json:"met"`
}

// Result is the JSON document of a run.
type Result struct {
	Command     string             `json:"command"`
	Time        time.Time          `json:"time"`
	Machine     Machine            `json:"machine"`
	Nodes       int                `json:"nodes"`
	Parallelism int                `json:"parallelism"`
	Steps       []Step             `json:"steps"`
	Floors      map[string]float64 `json:"floorSeconds"`
	Ratios      []Ratio            `json:"ratios"`
	Targets     []Target           `json:"targets"`
	Notes       []string           `json:"notes,omitempty"`
}

// Machine describes where the run happened.
type Machine struct {
	NProc     int    `json:"nproc"`
	MemoryGiB string `json:"memory"`
	Go        string `json:"go"`
	Load      string `json:"loadAverage"`
}

func main() {
	home, _ := os.UserHomeDir()
	nodes := flag.Int("nodes", 200, "nodes in the group")
	parallelism := flag.Int("parallelism", 0, "slipway --parallelism (0: slipway's default)")
	jsonOut := flag.String("json", "", "write the results as JSON to this file")
	cache := flag.String("cache", filepath.Join(home, ".cache", "slipway", "bench"), "directory for helm and work files")
	skipKubectl := flag.Bool("skip-kubectl", false, "do not run kubectl")
	skipHelm := flag.Bool("skip-helm", false, "do not run Helm")
	waitLimit := flag.Duration("wait", 15*time.Minute, "time limit of every wait (kubectl wait, helm --wait)")
	flag.Parse()
	log.SetFlags(log.Ltime)

	ctx := context.Background()
	b := &bench{n: *nodes, parallelism: *parallelism, waitLimit: *waitLimit,
		res: Result{Command: "go run ./bench " + strings.Join(os.Args[1:], " "), Time: time.Now().UTC(),
			Nodes: *nodes, Parallelism: *parallelism, Machine: machine(), Floors: map[string]float64{}}}
	if err := b.setup(ctx, *cache, *skipHelm); err != nil {
		log.Fatal(err)
	}
	defer b.proxy.Close()

	b.runSlipway(ctx)
	if !*skipKubectl {
		b.runKubectl(ctx)
	}
	if b.helm != "" {
		b.runHelm(ctx)
	}
	b.summarise()
	b.print(os.Stdout)
	if *jsonOut != "" {
		data, _ := json.MarshalIndent(b.res, "", "  ")
		if err := os.WriteFile(*jsonOut, append(data, '\n'), 0o644); err != nil {
			log.Fatal(err)
		}
		log.Printf("results written to %s", *jsonOut)
	}
}

type bench struct {
	n           int
	parallelism int
	waitLimit   time.Duration

	env        *devcluster.Env
	kc         *kube.Client
	work       string // this run's directory
	slipway    string // binary
	helm       string // binary, "" without Helm
	kubeconfig string // points at the counting proxy
	proxy      *devtest.Proxy
	toolEnv    []string
	res        Result
}

func (b *bench) setup(ctx context.Context, cache string, skipHelm bool) error {
	env, running, err := devcluster.Up(ctx, devcluster.Options{Progress: os.Stderr})
	if err != nil {
		return err
	}
	log.Printf("dev cluster %s (reused: %v), registry %s", env.Server, running, env.Registry)
	b.env = env
	if b.kc, err = kube.New(env.Kubeconfig, ""); err != nil {
		return err
	}
	run := randHex()
	b.work = filepath.Join(cache, "run-"+run)
	if err := os.MkdirAll(b.work, 0o755); err != nil {
		return err
	}
	log.Printf("work directory %s", b.work)

	b.slipway = filepath.Join(b.work, "slipway")
	t0 := time.Now()
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", b.slipway, "slipway.dev/slipway/cmd/slipway").CombinedOutput(); err != nil {
		return fmt.Errorf("build slipway: %v\n%s", err, out)
	}
	log.Printf("built slipway in %.1fs", time.Since(t0).Seconds())
	if !skipHelm {
		if b.helm, err = buildHelm(ctx, filepath.Join(cache, "bin")); err != nil {
			b.note(fmt.Sprintf("Helm left out: %v", err))
			log.Printf("Helm left out: %v", err)
			b.helm = ""
		}
	}

	if b.proxy, err = devtest.APIProxy(env); err != nil {
		return err
	}
	b.kubeconfig = filepath.Join(b.work, "kubeconfig")
	if err := b.proxy.WriteKubeconfig(b.kubeconfig); err != nil {
		return err
	}
	b.toolEnv = append(os.Environ(),
		"KUBECONFIG="+b.kubeconfig, "KUBE_CONFIG_PATH="+b.kubeconfig, "K8S_REGISTRY="+env.Registry,
		"KUBECACHEDIR="+filepath.Join(b.work, "kubecache"), "HELM_CACHE_HOME="+filepath.Join(b.work, "helm-cache"),
		"HELM_CONFIG_HOME="+filepath.Join(b.work, "helm-config"), "HELM_DATA_HOME="+filepath.Join(b.work, "helm-data"))
	for _, k := range []string{"K8S_NAMESPACE", "SLIPWAY_STATE"} {
		b.toolEnv = slices.DeleteFunc(b.toolEnv, func(s string) bool { return strings.HasPrefix(s, k+"=") })
	}

	// Leftovers of a killed run go first.
	for _, ns := range []string{nsSlipway, nsKubectl, nsHelm} {
		if err := b.kc.DeleteNamespaceAndWait(ctx, ns); err != nil {
			return err
		}
	}
	if err := writeGroup(b.work, b.n, run); err != nil {
		return err
	}
	log.Printf("group of %d nodes written", b.n)

	// The peers' objects: what slipway renders, in their own namespaces, their images pushed.
	if err := b.prepare(ctx, nsKubectl, filepath.Join(b.work, "kubectl.yaml"), true); err != nil {
		return err
	}
	if b.helm != "" {
		chart := filepath.Join(b.work, "chart")
		if err := os.MkdirAll(filepath.Join(chart, "templates"), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(chart, "Chart.yaml"), []byte("apiVersion: v2\nname: bench\nversion: 0.1.0\n"), 0o644); err != nil {
			return err
		}
		// The namespace comes from install --create-namespace, as Helm users do.
		if err := b.prepare(ctx, nsHelm, filepath.Join(chart, "templates", "objects.yaml"), false); err != nil {
			return err
		}
	}
	return nil
}

// prepare renders the group into ns (pushing its images there) and writes the YAML to path,
// with or without the Namespace object.
func (b *bench) prepare(ctx context.Context, ns, path string, withNamespace bool) error {
	cmd := exec.CommandContext(ctx, b.slipway, "render", "--push", "-n", ns)
	cmd.Dir = b.work
	cmd.Env = b.toolEnv
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("slipway render -n %s: %v\n%s", ns, err, tail(stderr.String(), 20))
	}
	var keep []string
	for _, d := range strings.Split(string(out), "\n---\n") {
		if strings.TrimSpace(d) == "" || !withNamespace && isNamespace(d) {
			continue
		}
		keep = append(keep, d)
	}
	return os.WriteFile(path, []byte(strings.Join(keep, "\n---\n")+"\n"), 0o644)
}

// isNamespace reports whether a YAML document is a Namespace object.
func isNamespace(doc string) bool {
	for _, l := range strings.Split(doc, "\n") {
		if l == "kind: Namespace" {
			return true
		}
	}
	return false
}

func (b *bench) runSlipway(ctx context.Context) {
	args := func(verb ...string) []string {
		if b.parallelism > 0 && (verb[0] == "apply" || verb[0] == "plan") {
			verb = append(verb, "--parallelism", strconv.Itoa(b.parallelism))
		}
		return verb
	}
	first := b.step(ctx, "slipway", "first apply (until all Ready)", b.slipway, args("apply", "--yes")...)
	if first.Error == "" {
		b.floor(ctx, "slipway", nsSlipway)
	}
	b.step(ctx, "slipway", "no-op apply", b.slipway, args("apply", "--yes")...)
	b.step(ctx, "slipway", "plan (no changes)", b.slipway, args("plan")...)
	if err := os.WriteFile(filepath.Join(b.work, "nodes", nodeName(0), "rootfs", "etc", "bench"), []byte("changed "+randHex()+"\n"), 0o644); err != nil {
		log.Fatal(err)
	}
	b.step(ctx, "slipway", "one node changed: apply", b.slipway, args("apply", "--yes")...)
	b.step(ctx, "slipway", "destroy", b.slipway, "destroy", "--yes")
}

func (b *bench) runKubectl(ctx context.Context) {
	kubectl := b.env.Kubectl()
	file := filepath.Join(b.work, "kubectl.yaml")
	apply := b.step(ctx, "kubectl", "apply --server-side", kubectl, "apply", "--server-side", "-f", file)
	wait := b.step(ctx, "kubectl", "wait --for=condition=Available", kubectl, "wait", "-n", nsKubectl,
		"--for=condition=Available", "deployment", "--all", "--timeout="+b.waitLimit.String())
	if apply.Error == "" && wait.Error == "" {
		b.floor(ctx, "kubectl", nsKubectl)
	}
	b.step(ctx, "kubectl", "no-op apply --server-side", kubectl, "apply", "--server-side", "-f", file)
	b.step(ctx, "kubectl", "diff --server-side", kubectl, "diff", "--server-side", "-f", file)
	b.step(ctx, "kubectl", "delete namespace (wait)", kubectl, "delete", "namespace", nsKubectl, "--wait=true", "--timeout="+b.waitLimit.String())
}

func (b *bench) runHelm(ctx context.Context) {
	chart := filepath.Join(b.work, "chart")
	limit := "--timeout=" + b.waitLimit.String()
	b.step(ctx, "helm", "install --wait", b.helm, "install", "bench", chart, "-n", nsHelm, "--create-namespace", "--wait", limit)
	b.step(ctx, "helm", "no-op upgrade --wait", b.helm, "upgrade", "bench", chart, "-n", nsHelm, "--wait", limit)
	b.step(ctx, "helm", "uninstall --wait", b.helm, "uninstall", "bench", "-n", nsHelm, "--wait", limit)
	if err := b.kc.DeleteNamespaceAndWait(ctx, nsHelm); err != nil {
		log.Printf("delete namespace %s: %v", nsHelm, err)
	}
}

// step runs one command through the proxy and records it. kubectl diff exits 1 when it finds
// differences: that is recorded as an error too, since after a no-op there should be none.
func (b *bench) step(ctx context.Context, tool, name, bin string, args ...string) Step {
	s := Step{Tool: tool, Step: name}
	logf, err := os.Create(filepath.Join(b.work, fmt.Sprintf("%02d-%s.log", len(b.res.Steps), tool)))
	if err != nil {
		log.Fatal(err)
	}
	defer logf.Close()
	fmt.Fprintf(logf, "$ %s %s\n", filepath.Base(bin), strings.Join(args, " "))
	before, merr := b.metrics(ctx)
	b.proxy.Reset()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = b.work
	cmd.Env = b.toolEnv
	cmd.Stdout, cmd.Stderr = logf, logf
	t0 := time.Now()
	err = cmd.Run()
	s.WallSeconds = time.Since(t0).Seconds()
	s.Requests, s.Writes = ownRequests(b.proxy.Requests())
	if after, err := b.metrics(ctx); err == nil && merr == nil {
		s.Cluster = map[string]int{}
		for v, n := range after {
			if d := int(n - before[v]); d != 0 {
				s.Cluster[v] = d
			}
		}
	}
	if err != nil {
		s.Error = fmt.Sprintf("%v (log %s)", err, logf.Name())
	}
	log.Printf("%-8s %-36s %8.2fs  %d requests, %d writes %s", tool, name, s.WallSeconds, total(s.Requests), s.Writes, s.Error)
	b.res.Steps = append(b.res.Steps, s)
	return s
}

// metrics sums apiserver_request_total by verb, dry runs excluded.
func (b *bench) metrics(ctx context.Context) (map[string]float64, error) {
	data, err := b.env.Get(ctx, "/metrics")
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		end := strings.LastIndex(line, "}")
		labels, value := line[len("apiserver_request_total{"):end], strings.TrimSpace(line[end+1:])
		if label(labels, "dry_run") != "" {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		out[label(labels, "verb")] += v
	}
	return out, sc.Err()
}

func label(labels, name string) string {
	i := strings.Index(labels, name+`="`)
	if i < 0 {
		return ""
	}
	rest := labels[i+len(name)+2:]
	return rest[:strings.IndexByte(rest, '"')]
}

// floor is the cluster's own time for the first apply in ns: from the first object's creation
// to the last Deployment's Available condition, read from the objects (1 s resolution).
func (b *bench) floor(ctx context.Context, tool, ns string) {
	first, last, err := b.floorTimes(ctx, ns)
	if err != nil {
		b.note(fmt.Sprintf("floor of %s: %v", tool, err))
		return
	}
	b.res.Floors[tool] = last.Sub(first).Seconds()
	log.Printf("%-8s cluster floor %8.0fs  (%s → %s)", tool, last.Sub(first).Seconds(), first.Format(time.TimeOnly), last.Format(time.TimeOnly))
}

func (b *bench) floorTimes(ctx context.Context, ns string) (time.Time, time.Time, error) {
	var first, last time.Time
	seen := func(t metav1.Time) {
		if first.IsZero() || t.Time.Before(first) {
			first = t.Time
		}
	}
	cs := b.kc.Clientset
	nsObj, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		return first, last, err
	}
	seen(nsObj.CreationTimestamp)
	opts := metav1.ListOptions{}
	nps, err := cs.NetworkingV1().NetworkPolicies(ns).List(ctx, opts)
	if err != nil {
		return first, last, err
	}
	for _, o := range nps.Items {
		seen(o.CreationTimestamp)
	}
	sas, err := cs.CoreV1().ServiceAccounts(ns).List(ctx, opts)
	if err != nil {
		return first, last, err
	}
	for _, o := range sas.Items {
		if o.Name != "default" {
			seen(o.CreationTimestamp)
		}
	}
	pvcs, err := cs.CoreV1().PersistentVolumeClaims(ns).List(ctx, opts)
	if err != nil {
		return first, last, err
	}
	for _, o := range pvcs.Items {
		seen(o.CreationTimestamp)
	}
	svcs, err := cs.CoreV1().Services(ns).List(ctx, opts)
	if err != nil {
		return first, last, err
	}
	for _, o := range svcs.Items {
		seen(o.CreationTimestamp)
	}
	deps, err := cs.AppsV1().Deployments(ns).List(ctx, opts)
	if err != nil {
		return first, last, err
	}
	if len(deps.Items) != b.n {
		return first, last, fmt.Errorf("%d Deployments in %s, want %d", len(deps.Items), ns, b.n)
	}
	for _, d := range deps.Items {
		seen(d.CreationTimestamp)
		t, ok := available(&d)
		if !ok {
			return first, last, fmt.Errorf("deployment %s/%s is not Available", ns, d.Name)
		}
		if t.After(last) {
			last = t
		}
	}
	return first, last, nil
}

func available(d *appsv1.Deployment) (time.Time, bool) {
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time, d.Status.ReadyReplicas == *d.Spec.Replicas
		}
	}
	return time.Time{}, false
}

func (b *bench) note(s string) { b.res.Notes = append(b.res.Notes, s) }

func (b *bench) find(tool, prefix string) *Step {
	for i := range b.res.Steps {
		s := &b.res.Steps[i]
		if s.Tool == tool && strings.HasPrefix(s.Step, prefix) && s.Error == "" {
			return s
		}
	}
	return nil
}

// summarise computes the ratios and checks the targets of issue 8.
func (b *bench) summarise() {
	wall := func(tool string, prefixes ...string) (float64, bool) {
		var sum float64
		for _, p := range prefixes {
			s := b.find(tool, p)
			if s == nil {
				return 0, false
			}
			sum += s.WallSeconds
		}
		return sum, true
	}
	ratio := func(step, peer string, slip float64, okS bool, other float64, okO bool) (float64, bool) {
		if !okS || !okO || other == 0 {
			return 0, false
		}
		r := Ratio{Step: step, Peer: peer, Slipway: slip, Other: other, Ratio: slip / other}
		b.res.Ratios = append(b.res.Ratios, r)
		return r.Ratio, true
	}
	first, okF := wall("slipway", "first apply")
	noop, okN := wall("slipway", "no-op apply")
	pl, okP := wall("slipway", "plan")
	destroy, okD := wall("slipway", "destroy")
	kApply, okKA := wall("kubectl", "apply --server-side", "wait")
	kNoop, okKN := wall("kubectl", "no-op apply")
	kDiff, okKD := wall("kubectl", "diff")
	kDel, okKDel := wall("kubectl", "delete")
	hInst, okHI := wall("helm", "install")
	hUp, okHU := wall("helm", "no-op upgrade")
	hUn, okHUn := wall("helm", "uninstall")
	floor, okFl := b.res.Floors["slipway"]

	rFloor, okRF := ratio("first apply", "cluster floor (slipway's objects)", first, okF, floor, okFl)
	kf, okKF := b.res.Floors["kubectl"]
	ratio("first apply", "cluster floor (kubectl's objects)", first, okF, kf, okKF)
	rKA, okRKA := ratio("first apply", "kubectl apply+wait", first, okF, kApply, okKA)
	rHI, okRHI := ratio("first apply", "helm install --wait", first, okF, hInst, okHI)
	rKN, okRKN := ratio("no-op apply", "kubectl no-op apply", noop, okN, kNoop, okKN)
	rHU, okRHU := ratio("no-op apply", "helm no-op upgrade --wait", noop, okN, hUp, okHU)
	rKD, okRKD := ratio("plan", "kubectl diff --server-side", pl, okP, kDiff, okKD)
	ratio("destroy", "kubectl delete namespace", destroy, okD, kDel, okKDel)
	ratio("destroy", "helm uninstall --wait", destroy, okD, hUn, okHUn)

	target := func(goal string, ok bool, value string, met bool) {
		if !ok {
			b.res.Targets = append(b.res.Targets, Target{Goal: goal, Value: "not measured"})
			return
		}
		b.res.Targets = append(b.res.Targets, Target{Goal: goal, Value: value, Met: met})
	}
	target("first apply <= 1.2 x cluster floor", okRF, fmt.Sprintf("%.2f x", rFloor), rFloor <= 1.2)
	target("first apply <= 0.5 x kubectl apply+wait", okRKA, fmt.Sprintf("%.2f x", rKA), rKA <= 0.5)
	target("first apply <= 1/3 x helm install --wait", okRHI, fmt.Sprintf("%.2f x", rHI), rHI <= 1.0/3)
	target("no-op apply < 1 s", okN, fmt.Sprintf("%.2f s", noop), noop < 1)
	if s := b.find("slipway", "no-op apply"); s != nil {
		target("no-op apply: zero write requests", true, fmt.Sprintf("%d writes", s.Writes), s.Writes == 0)
	}
	target("no-op apply >= 10 x faster than kubectl's", okRKN, fmt.Sprintf("%.1f x faster", 1/rKN), rKN <= 0.1)
	target("no-op apply >= 30 x faster than helm's no-op upgrade", okRHU, fmt.Sprintf("%.1f x faster", 1/rHU), rHU <= 1.0/30)
	target("plan <= kubectl diff --server-side", okRKD, fmt.Sprintf("%.2f x", rKD), rKD <= 1)
}

func (b *bench) print(w io.Writer) {
	m := b.res.Machine
	fmt.Fprintf(w, "\n%d nodes, slipway --parallelism %s; %d CPUs, %s memory, %s, load %s\n\n", b.n, parStr(b.parallelism), m.NProc, m.MemoryGiB, m.Go, m.Load)
	fmt.Fprintf(w, "| tool | step | wall s | own requests by verb | own writes | cluster requests (all clients) |\n|---|---|---:|---|---:|---|\n")
	for _, s := range b.res.Steps {
		wall := fmt.Sprintf("%.2f", s.WallSeconds)
		if s.Error != "" {
			wall += " (failed)"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %d | %s |\n", s.Tool, s.Step, wall, verbs(s.Requests), s.Writes, verbs(s.Cluster))
	}
	for _, t := range slices.Sorted(maps.Keys(b.res.Floors)) {
		fmt.Fprintf(w, "| cluster | floor of %s's first apply | %.0f | | | |\n", t, b.res.Floors[t])
	}
	fmt.Fprintf(w, "\n| slipway step | peer | slipway s | peer s | slipway/peer |\n|---|---|---:|---:|---:|\n")
	for _, r := range b.res.Ratios {
		fmt.Fprintf(w, "| %s | %s | %.2f | %.2f | %.3f |\n", r.Step, r.Peer, r.Slipway, r.Other, r.Ratio)
	}
	fmt.Fprintf(w, "\n| target (issue 8) | measured | met |\n|---|---|---|\n")
	for _, t := range b.res.Targets {
		met := "no"
		if t.Met {
			met = "yes"
		}
		fmt.Fprintf(w, "| %s | %s | %s |\n", t.Goal, t.Value, met)
	}
	for _, n := range b.res.Notes {
		fmt.Fprintf(w, "\nnote: %s\n", n)
	}
}

func parStr(p int) string {
	if p == 0 {
		return "default (10)"
	}
	return strconv.Itoa(p)
}

func verbs[V int | float64](m map[string]V) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %v", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// ownRequests counts a tool's requests by verb, and its writes that were not dry runs.
func ownRequests(reqs []devtest.Request) (map[string]int, int) {
	writes := 0
	for _, r := range reqs {
		if r.Write() && !r.DryRun {
			writes++
		}
	}
	return devtest.ByVerb(reqs), writes
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// writeGroup writes slipway.yaml and a tiny rootfs per node into dir; run makes every image
// new to the registry, so the first apply pushes them all.
func writeGroup(dir string, n int, run string) error {
	var y strings.Builder
	fmt.Fprintf(&y, "group: %s\nnamespace: %s\ndefaults:\n  state: {size: 1Gi}\nnodes:\n", group, nsSlipway)
	for i := range n {
		name := nodeName(i)
		root := filepath.Join(dir, "nodes", name, "rootfs")
		if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(root, "etc", "bench"), []byte(fmt.Sprintf("node %s run %s\n", name, run)), 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(root, "etc", "hostname"), []byte(name+"\n"), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(&y, "  %s:\n    image: {rootfs: nodes/%s/rootfs}\n    firewall: {served: [80], published: [80]}\n", name, name)
	}
	return os.WriteFile(filepath.Join(dir, "slipway.yaml"), []byte(y.String()), 0o644)
}

func nodeName(i int) string { return fmt.Sprintf("n%03d", i) }

// buildHelm installs Helm v4 at the pinned version into dir once: with go install, or, when
// that refuses (replace directives), in a small module of its own that requires it.
func buildHelm(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "helm")
	if fi, err := os.Stat(bin); err == nil && !fi.IsDir() {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	log.Printf("building %s into %s (once)", helmModule, dir)
	cmd := exec.CommandContext(ctx, "go", "install", helmModule)
	cmd.Env = append(os.Environ(), "GOBIN="+dir, "GOFLAGS=-mod=mod")
	cmd.Dir = os.TempDir()
	out, err := cmd.CombinedOutput()
	if err == nil {
		return bin, nil
	}
	if !strings.Contains(string(out), "replace directive") {
		return "", fmt.Errorf("go install %s: %v\n%s", helmModule, err, tail(string(out), 20))
	}
	mod := filepath.Join(dir, "..", "helm-module")
	if err := os.MkdirAll(mod, 0o755); err != nil {
		return "", err
	}
	path, version, _ := strings.Cut(helmModule, "@")
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module slipway.dev/bench/helm\n\ngo 1.26.0\n\nrequire helm.sh/helm/v4 "+version+"\n"), 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(mod, "tools.go"), []byte("//go:build tools\n\npackage tools\n\nimport _ \""+path+"\"\n"), 0o644); err != nil {
		return "", err
	}
	for _, args := range [][]string{{"mod", "tidy"}, {"build", "-o", bin, path}} {
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = mod
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("go %s in %s: %v\n%s", strings.Join(args, " "), mod, err, tail(string(out), 20))
		}
	}
	return bin, nil
}

func machine() Machine {
	m := Machine{NProc: runtime.NumCPU(), Go: runtime.Version()}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "MemTotal:" {
				kb, _ := strconv.ParseFloat(f[1], 64)
				m.MemoryGiB = fmt.Sprintf("%.1f GiB", kb/(1<<20))
			}
		}
	}
	if data, err := os.ReadFile("/proc/loadavg"); err == nil {
		m.Load = strings.Join(strings.Fields(string(data))[:3], " ")
	}
	if out, err := exec.Command("go", "version").Output(); err == nil {
		m.Go = strings.TrimSpace(strings.TrimPrefix(string(out), "go version "))
	}
	return m
}

func randHex() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
