package main

// Waves mode (issue 38): G groups of K nodes in W waves, each group of a wave depending on
// every group of the wave before, as one waves file. slipway applies the file; its peer is the
// operator's script the waves file replaces: per wave, kubectl apply --server-side of the
// wave's rendered objects, then kubectl wait until every Deployment of the wave is Available.
// Both work on the same objects (the peer's rendered from group files that differ only in
// their names), side by side in one run.

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// wavesSpec is the shape of the waves mode's file.
type wavesSpec struct {
	groups, nodes, waves int
}

// wavesGroup is the name (and namespace) of group i of a tool's file: bw-NN for slipway,
// bwk-NN for the peer's objects.
func wavesGroup(prefix string, i int) string { return fmt.Sprintf("%s-%02d", prefix, i) }

// namespaces are every namespace of the mode: both tools' groups.
func (w wavesSpec) namespaces() []string {
	var out []string
	for i := range w.groups {
		out = append(out, wavesGroup("bw", i), wavesGroup("bwk", i))
	}
	return out
}

// wave is the wave of group i.
func (w wavesSpec) wave(i int) int { return i / ((w.groups + w.waves - 1) / w.waves) }

// writeWaves writes both tools' group files (a directory per group, a tiny rootfs per node)
// and slipway's waves file.
func (b *bench) writeWaves(w wavesSpec) error {
	var y strings.Builder
	y.WriteString("groups:\n")
	for i := range w.groups {
		for _, prefix := range []string{"bw", "bwk"} {
			name := wavesGroup(prefix, i)
			dir := filepath.Join(b.work, name)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			if err := writeGroup(dir, w.nodes, b.run+name, name, name); err != nil {
				return err
			}
		}
		name := wavesGroup("bw", i)
		fmt.Fprintf(&y, "  - name: %s\n    file: %s/slipway.yaml\n", name, name)
		var deps []string
		for j := range i {
			if w.wave(j) == w.wave(i)-1 {
				deps = append(deps, wavesGroup("bw", j))
			}
		}
		if len(deps) > 0 {
			fmt.Fprintf(&y, "    dependsOn: [%s]\n", strings.Join(deps, ", "))
		}
	}
	return os.WriteFile(filepath.Join(b.work, "waves.yaml"), []byte(y.String()), 0o644)
}

// prepareWaves renders the peer's groups (pushing their images) into one file per wave.
func (b *bench) prepareWaves(ctx context.Context, w wavesSpec) error {
	files := make([][]string, w.waves)
	for i := range w.groups {
		name := wavesGroup("bwk", i)
		path := filepath.Join(b.work, name+".yaml")
		if err := b.renderTo(ctx, filepath.Join(b.work, name), name, path, true); err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files[w.wave(i)] = append(files[w.wave(i)], strings.TrimSpace(string(data)))
	}
	for k, docs := range files {
		if err := os.WriteFile(b.waveFile(k), []byte(strings.Join(docs, "\n---\n")+"\n"), 0o644); err != nil {
			return err
		}
	}
	log.Printf("peer's objects of %d groups rendered, their images pushed", w.groups)
	return nil
}

func (b *bench) waveFile(k int) string {
	return filepath.Join(b.work, fmt.Sprintf("kubectl-wave-%d.yaml", k))
}

// runWaves measures slipway's waves file and the peer's script, slipway first.
func (b *bench) runWaves(ctx context.Context, w wavesSpec, profile bool) {
	b.n = w.nodes // the Deployments floorTimes finds in each namespace
	b.res.Nodes = w.groups * w.nodes
	if err := b.writeWaves(w); err != nil {
		log.Fatal(err)
	}
	if err := b.prepareWaves(ctx, w); err != nil {
		log.Fatal(err)
	}
	waves := filepath.Join(b.work, "waves.yaml")
	first := b.step(ctx, "slipway", firstApplyStep, b.slipway, "apply", "-f", waves, "--yes")
	if first.Error == "" {
		b.floorOf(ctx, "slipway", "bw", w)
	}
	var env []string
	for r := range 3 {
		if profile && r == 0 {
			env = []string{"SLIPWAY_CPUPROFILE=" + filepath.Join(b.work, "noop.cpu.pprof")}
		}
		b.stepEnv(ctx, env, "slipway", "no-op apply", b.slipway, "apply", "-f", waves, "--yes")
		env = nil
	}
	b.step(ctx, "slipway", "plan (no changes)", b.slipway, "plan", "-f", waves)

	kubectl := b.env.Kubectl()
	var peer float64
	ok := true
	for k := range w.waves {
		apply := b.step(ctx, "kubectl", fmt.Sprintf("wave %d: apply --server-side", k), kubectl, "apply", "--server-side", "-f", b.waveFile(k))
		var sel []string
		for i := range w.groups {
			if w.wave(i) == k {
				sel = append(sel, wavesGroup("bwk", i))
			}
		}
		wait := b.step(ctx, "kubectl", fmt.Sprintf("wave %d: wait --for=condition=Available", k), kubectl, "wait", "-A",
			"-l", "slipway.dev/group in ("+strings.Join(sel, ",")+")", "--for=condition=Available", "deployment", "--timeout="+b.waitLimit.String())
		peer += apply.WallSeconds + wait.WallSeconds
		ok = ok && apply.Error == "" && wait.Error == ""
	}
	if ok {
		b.floorOf(ctx, "kubectl", "bwk", w)
		b.res.Floors["kubectl script"] = peer
	}
	var all []string
	for k := range w.waves {
		all = append(all, "-f", b.waveFile(k))
	}
	b.step(ctx, "kubectl", "no-op apply --server-side (all waves)", kubectl, append([]string{"apply", "--server-side"}, all...)...)

	b.step(ctx, "slipway", "destroy", b.slipway, "destroy", "-f", waves, "--yes")
	var peerNS []string
	for i := range w.groups {
		peerNS = append(peerNS, wavesGroup("bwk", i))
	}
	b.step(ctx, "kubectl", "delete namespace (wait)", kubectl, append(append([]string{"delete", "namespace"}, peerNS...), "--wait=true", "--timeout="+b.waitLimit.String())...)
}

// floorOf is the cluster's floor of a tool's groups: their first object's creation to their
// last Deployment's Available, over every namespace.
func (b *bench) floorOf(ctx context.Context, tool, prefix string, w wavesSpec) {
	var namespaces []string
	for i := range w.groups {
		namespaces = append(namespaces, wavesGroup(prefix, i))
	}
	b.floorOver(ctx, tool, namespaces)
}

// floorOver is the cluster's floor of a tool's objects in namespaces: the first object's
// creation to the last Deployment's Available, over them all.
func (b *bench) floorOver(ctx context.Context, tool string, namespaces []string) {
	var first, last time.Time
	for _, ns := range namespaces {
		f, l, err := b.floorTimes(ctx, ns)
		if err != nil {
			b.note(fmt.Sprintf("floor of %s: %v", tool, err))
			return
		}
		if first.IsZero() || f.Before(first) {
			first = f
		}
		if l.After(last) {
			last = l
		}
	}
	b.res.Floors[tool] = last.Sub(first).Seconds()
	log.Printf("%-8s cluster floor %8.0fs  (%s → %s)", tool, last.Sub(first).Seconds(), first.Format(time.TimeOnly), last.Format(time.TimeOnly))
}

// printWaves prints the steps and slipway's figures against the peer and the goals of issue 38.
func (b *bench) printWaves(out io.Writer, w wavesSpec) {
	m := b.res.Machine
	fmt.Fprintf(out, "\n%d groups of %d nodes in %d waves; %d CPUs, %s memory, %s, load %s\n\n", w.groups, w.nodes, w.waves, m.NProc, m.MemoryGiB, m.Go, m.Load)
	fmt.Fprintf(out, "| tool | step | wall s | own requests by verb | own writes |\n|---|---|---:|---|---:|\n")
	for _, s := range b.res.Steps {
		wall := fmt.Sprintf("%.2f", s.WallSeconds)
		if s.Error != "" {
			wall += " (failed)"
		}
		fmt.Fprintf(out, "| %s | %s | %s | %s | %d |\n", s.Tool, s.Step, wall, verbs(s.Requests), s.Writes)
	}
	first := b.find("slipway", firstApplyStep)
	peer, okP := b.res.Floors["kubectl script"]
	if first != nil && okP {
		r := first.WallSeconds / peer
		b.res.Ratios = append(b.res.Ratios, Ratio{Step: firstApplyStep, Peer: "kubectl apply + wait, wave by wave", Slipway: first.WallSeconds, Other: peer, Ratio: r})
		b.res.Targets = append(b.res.Targets, Target{Goal: "first apply <= 1.2 x the peer's apply + wait of the same objects", Value: fmt.Sprintf("%.2f x", r), Met: r <= 1.2})
		fmt.Fprintf(out, "\nfirst apply %.2f s, kubectl apply + wait wave by wave %.2f s: %.2f; cluster floor of slipway's objects %.0f s, of kubectl's %.0f s\n",
			first.WallSeconds, peer, r, b.res.Floors["slipway"], b.res.Floors["kubectl"])
	}
	for _, s := range b.res.Steps {
		if s.Tool == "slipway" && s.Step == "no-op apply" && s.Error == "" {
			b.res.Targets = append(b.res.Targets, Target{Goal: "no-op apply < 3 s with 0 writes", Value: fmt.Sprintf("%.2f s, %d writes", s.WallSeconds, s.Writes), Met: s.WallSeconds < 3 && s.Writes == 0})
		}
	}
	for _, t := range b.res.Targets {
		fmt.Fprintf(out, "goal %-66s %-20s met: %v\n", t.Goal, t.Value, t.Met)
	}
}
