package main

// Scale mode (issue 17): slipway alone at several group sizes, per step its wall time, peak
// RSS, requests by verb and writes, and the cluster's floor of the first apply; a table and a
// plot of time and memory against N.
//
//	go run ./bench -scale -sizes 200,1000,2000 -profile

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// settleCores is the dev cluster's CPU, cores, below which the scale mode counts it settled
// after a first apply: at rest with 1,000 pods it spent about 0.25 (issue 17, run 7), 0.17 in
// run 12; at 0.4 a no-op of run 12 still met the work left of the first apply.
const settleCores = 0.3

// nsScale is the scale mode's namespace (-scale-namespace). Another bench run's setup
// deletes bench-scale as a leftover: one on the same cluster at the same time needs its own.
var nsScale = "bench-scale"

// ScaleRow is one group size of the scale mode.
type ScaleRow struct {
	Nodes int    `json:"nodes"`
	Steps []Step `json:"steps"` // first apply, no-op apply, plan, destroy
	// FloorSeconds is the cluster's floor of the first apply (0 when it could not be read).
	FloorSeconds float64 `json:"floorSeconds"`
	// Profiles lists the profile files of the no-op apply and plan, when asked for.
	Profiles []string `json:"profiles,omitempty"`
	// Phases splits the first apply: plan, push, objects and rollouts (from its events).
	Phases *Phases `json:"phases,omitempty"`
	// SettleSeconds is how long the bench waited after the first apply for the cluster to
	// spend at most settleCores (SettleCores: its rate then, cores) before the no-op.
	SettleSeconds float64 `json:"settleSeconds"`
	SettleCores   float64 `json:"settleCores"`
	// Crane is crane's push of the same images, just before the first apply.
	Crane *CranePush `json:"crane,omitempty"`
	// Repeats are the wall times, in the order run, of the steps measured repeats times (the
	// no-op apply and the plan): Steps holds the run of the median.
	Repeats map[string][]float64 `json:"repeats,omitempty"`
}

// repeats is how many times the scale mode runs the no-op apply and the plan of each size.
const repeats = 3

// median is the step of the median wall time of steps (the later one of two in the middle).
func median(steps []Step) Step {
	sorted := slices.Clone(steps)
	slices.SortStableFunc(sorted, func(a, b Step) int { return cmp.Compare(a.WallSeconds, b.WallSeconds) })
	return sorted[len(sorted)/2]
}

func walls(steps []Step) []float64 {
	out := make([]float64, len(steps))
	for i, s := range steps {
		out[i] = s.WallSeconds
	}
	return out
}

func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-sizes %q: %q is not a group size", s, f)
		}
		out = append(out, n)
	}
	return out, nil
}

func (b *bench) runScale(ctx context.Context, sizes []int, profile bool, svgOut, jsonOut string) {
	root := b.work
	for _, n := range sizes {
		row := b.scaleSize(ctx, root, n, profile)
		b.res.Scale = append(b.res.Scale, row)
		b.work = root
		// Written after every size: a run stopped during a large size keeps the smaller ones.
		writeJSON(b.res, jsonOut)
	}
	b.printScale(os.Stdout)
	if svgOut == "" {
		svgOut = filepath.Join(root, "scale.svg")
	}
	if err := os.WriteFile(svgOut, []byte(scaleSVG(b.res.Scale)), 0o644); err != nil {
		log.Fatal(err)
	}
	log.Printf("plot written to %s", svgOut)
	writeJSON(b.res, jsonOut)
}

// scaleSize runs one group size in a directory and a namespace of its own, and destroys it.
func (b *bench) scaleSize(ctx context.Context, root string, n int, profile bool) ScaleRow {
	row := ScaleRow{Nodes: n}
	b.work = filepath.Join(root, fmt.Sprintf("scale-%d", n))
	b.n = n
	if err := writeGroup(b.work, n, randHex(), nsScale, nsScale); err != nil {
		log.Fatal(err)
	}
	log.Printf("scale: group of %d nodes written to %s", n, b.work)
	par := []string{}
	if b.parallelism > 0 {
		par = []string{"--parallelism", strconv.Itoa(b.parallelism)}
	}
	profEnv := func(step string) []string {
		if !profile {
			return nil
		}
		cpu := filepath.Join(b.work, step+".cpu.pprof")
		mem := filepath.Join(b.work, step+".heap.pprof")
		row.Profiles = append(row.Profiles, cpu, mem)
		return []string{"SLIPWAY_CPUPROFILE=" + cpu, "SLIPWAY_MEMPROFILE=" + mem}
	}
	row.Crane = b.cranePhase(ctx, n, b.effectiveParallelism())
	var peakEnv []string
	if profile {
		peak := filepath.Join(b.work, "first-apply.peak.pprof")
		row.Profiles = append(row.Profiles, peak)
		peakEnv = []string{"SLIPWAY_MEMPROFILE_PEAK=" + peak}
	}
	first := b.stepEnv(ctx, peakEnv, "slipway", firstApplyStep, b.slipway, append([]string{"apply", "--yes", "-o", "json"}, par...)...)
	row.Phases = b.phases(first)
	if first.Error == "" {
		if t0, t1, err := b.floorTimes(ctx, nsScale); err == nil {
			row.FloorSeconds = t1.Sub(t0).Seconds()
			log.Printf("scale: cluster floor of %d nodes %.0fs", n, row.FloorSeconds)
		} else {
			b.note(fmt.Sprintf("floor of %d nodes: %v", n, err))
		}
	}
	// The no-op and the plan measure slipway, not the cluster's work after the first apply.
	waited, rate := settle(ctx, b.env, settleCores, 5*time.Second, 3*time.Minute)
	row.SettleSeconds, row.SettleCores = waited.Seconds(), rate
	log.Printf("scale: the cluster settled to %.2f cores in %.0fs", rate, waited.Seconds())
	// Each measured repeats times, the two alternated, and the median kept: one wall time of a
	// second or less moves by a tenth with the cluster's periodic work (resyncs) it meets.
	var noops, plans []Step
	for i := range repeats {
		env := func(step string) []string {
			if i > 0 {
				return nil // profiled once
			}
			return profEnv(step)
		}
		noops = append(noops, b.stepEnv(ctx, env("noop-apply"), "slipway", "no-op apply", b.slipway, append([]string{"apply", "--yes"}, par...)...))
		plans = append(plans, b.stepEnv(ctx, env("plan"), "slipway", "plan (no changes)", b.slipway, append([]string{"plan"}, par...)...))
	}
	noop, plan := median(noops), median(plans)
	row.Repeats = map[string][]float64{noop.Step: walls(noops), plan.Step: walls(plans)}
	destroy := b.step(ctx, "slipway", "destroy", b.slipway, "destroy", "--yes")
	if destroy.Error != "" {
		if err := b.kc.DeleteNamespaceAndWait(ctx, nsScale, ""); err != nil {
			log.Printf("delete namespace %s: %v", nsScale, err)
		}
	}
	row.Steps = []Step{first, noop, plan, destroy}
	return row
}

// phases reads the push phase of a first apply from its log; nil, noted, when it cannot.
func (b *bench) phases(s Step) *Phases {
	f, err := os.Open(s.Log)
	if err != nil {
		b.note(fmt.Sprintf("phases of %s: %v", s.Step, err))
		return nil
	}
	defer f.Close()
	ph, err := phasesOf(f, s.Start, time.Duration(s.WallSeconds*float64(time.Second)))
	if err != nil {
		b.note(fmt.Sprintf("phases of %s (%s): %v", s.Step, s.Log, err))
		return nil
	}
	log.Printf("slipway  first apply: plan %.2fs, push %.2fs (%d images), objects and rollouts %.2fs", ph.PlanSeconds, ph.PushSeconds, ph.Pushed, ph.AfterPushSeconds)
	return &ph
}

// effectiveParallelism is slipway's --parallelism in this run: the flag, else its default.
func (b *bench) effectiveParallelism() int {
	if b.parallelism > 0 {
		return b.parallelism
	}
	return defaultParallelism
}

func (b *bench) printScale(w io.Writer) {
	m := b.res.Machine
	fmt.Fprintf(w, "\nscale: slipway alone, --parallelism %s; %d CPUs, %s memory, %s, load at start %s\n\n", parStr(b.parallelism), m.NProc, m.MemoryGiB, m.Go, m.Load)
	fmt.Fprintf(w, "| N | step | wall s | s per 1,000 nodes | peak RSS MB | own CPU s | the cluster's CPU s over the step | own requests by verb | own writes |\n|---:|---|---:|---:|---:|---:|---|---|---:|\n")
	for _, r := range b.res.Scale {
		for _, s := range r.Steps {
			wall := fmt.Sprintf("%.2f", s.WallSeconds)
			if s.Error != "" {
				wall += " (failed)"
			}
			step := s.Step
			if rs := r.Repeats[s.Step]; len(rs) > 1 {
				step += fmt.Sprintf(" (median of %d: %s)", len(rs), wallList(rs))
			}
			fmt.Fprintf(w, "| %d | %s | %s | %.2f | %.0f | %.2f | %s | %s | %d |\n", r.Nodes, step, wall, s.WallSeconds*1000/float64(r.Nodes), s.PeakRSSMB, s.CPUSeconds, cpuText(s.ClusterCPU), verbs(s.Requests), s.Writes)
		}
		fmt.Fprintf(w, "| %d | cluster floor of the first apply | %.0f | %.2f | | | | | |\n", r.Nodes, r.FloorSeconds, r.FloorSeconds*1000/float64(r.Nodes))
		fmt.Fprintf(w, "| %d | wait before the no-op, the cluster settling to at most %.1f cores | %.0f | | | | %.2f cores when it ended | | |\n", r.Nodes, settleCores, r.SettleSeconds, r.SettleCores)
	}
	fmt.Fprintf(w, "\n| N | first apply: plan s | push s | objects and rollouts s | floor s | after push / floor | crane push s (same images, same parallelism) | push / crane |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range b.res.Scale {
		if r.Phases == nil {
			continue
		}
		ph := r.Phases
		crane, ratio := "—", "—"
		if r.Crane != nil && r.Crane.Error == "" && r.Crane.WallSeconds > 0 {
			crane = fmt.Sprintf("%.2f (%d at a time)", r.Crane.WallSeconds, r.Crane.Parallelism)
			ratio = fmt.Sprintf("%.2f", ph.PushSeconds/r.Crane.WallSeconds)
		}
		fl := "—"
		if r.FloorSeconds > 0 {
			fl = fmt.Sprintf("%.2f", ph.AfterPushSeconds/r.FloorSeconds)
		}
		fmt.Fprintf(w, "| %d | %.2f | %.2f | %.2f | %.0f | %s | %s | %s |\n", r.Nodes, ph.PlanSeconds, ph.PushSeconds, ph.AfterPushSeconds, r.FloorSeconds, fl, crane, ratio)
	}
	for _, n := range b.res.Notes {
		fmt.Fprintf(w, "\nnote: %s\n", n)
	}
}

// wallList is wall times as the table prints them: "0.61, 0.58, 0.70".
func wallList(ws []float64) string {
	parts := make([]string, len(ws))
	for i, v := range ws {
		parts[i] = fmt.Sprintf("%.2f", v)
	}
	return strings.Join(parts, ", ")
}

// replotFrom redraws the plot of the scale rows of a JSON result into svgOut.
func replotFrom(jsonPath, svgOut string) error {
	data, err := os.ReadFile(jsonPath)
	if err != nil {
		return err
	}
	var res Result
	if err := json.Unmarshal(data, &res); err != nil {
		return fmt.Errorf("%s: %w", jsonPath, err)
	}
	if len(res.Scale) == 0 || svgOut == "" {
		return fmt.Errorf("-replot %s: want a scale result and -svg", jsonPath)
	}
	return os.WriteFile(svgOut, []byte(scaleSVG(res.Scale)), 0o644)
}
