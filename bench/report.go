package main

// Report: the cluster's floor, the ratios to each peer, the targets of issue 8 and the
// printed tables.

import (
	"context"
	"fmt"
	"io"
	"log"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// floor is the cluster's own time for the first apply in ns: from the first object's creation
// to the last Deployment's Available condition, read from the objects (1 s resolution).
func (b *bench) floor(ctx context.Context, tool, ns string) {
	first, last, err := b.floorTimes(ctx, ns)
	if err != nil {
		b.note(fmt.Sprintf("floor of %s: %v", tool, err))
		return
	}
	if b.floors != nil {
		b.floors[tool] = last.Sub(first).Seconds()
	}
	if b.repeat == 0 {
		b.res.Floors[tool] = last.Sub(first).Seconds()
	}
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

// summarise computes the ratios and checks the targets of issue 8, from the first repeat's
// steps, and issue 17's goal at 200 nodes from every repeat.
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
	b.pairsTarget()
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
	b.printPairs(w)
	fmt.Fprintf(w, "\n| target (issues 8 and 17) | measured | met |\n|---|---|---|\n")
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
