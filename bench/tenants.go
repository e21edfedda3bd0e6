package main

// Tenants mode (issue 46): D deployments of K nodes applied by R slipway runs at once. Each
// group file has two apps of K nodes; each app is a target deployed under two deployment ids,
// so one file makes four deployments (bt-NN.x.a, bt-NN.x.b, bt-NN.y.a, bt-NN.y.b), each with
// its own namespace, state and lock. The peer is kubectl apply --server-side + wait of the
// same objects, with the same concurrency, in the same run; the floor is the cluster's, read
// from the objects as the other modes read it. The mode counts lost locks (runs that failed
// on a lock) and cross writes (an object of one deployment removed, replaced, or written by
// slipway after that deployment's own run had ended: only another deployment's run can have
// done it).

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// tenantsSpec is the shape of the tenants mode.
type tenantsSpec struct {
	deployments, nodes, runs int
}

// The apps of every group file and the deployment ids of every app: four deployments a file.
var (
	tenantApps = []string{"x", "y"}
	tenantIDs  = []string{"a", "b"}
)

func (t tenantsSpec) files() int { return t.deployments / (len(tenantApps) * len(tenantIDs)) }

// tenantDep is one deployment: its group file's directory, target, id and namespace (FR-021:
// <group>-<app>-<id>; the peer's copy is in btk-… rendered from a file of the app alone).
type tenantDep struct {
	dir, app, id, ns, peerNS, peerDir string
}

func (t tenantsSpec) deps() []tenantDep {
	var out []tenantDep
	for i := range t.files() {
		g, k := fmt.Sprintf("bt-%02d", i), fmt.Sprintf("btk-%02d", i)
		for _, app := range tenantApps {
			for _, id := range tenantIDs {
				out = append(out, tenantDep{dir: g, app: app, id: id, ns: g + "-" + app + "-" + id,
					peerNS: k + "-" + app + "-" + id, peerDir: k + "-" + app})
			}
		}
	}
	return out
}

// namespaces are both tools' namespaces.
func (t tenantsSpec) namespaces() []string {
	var out []string
	for _, d := range t.deps() {
		out = append(out, d.ns, d.peerNS)
	}
	return out
}

// writeTenants writes slipway's group files (two apps of K nodes each) and the peer's, one
// per app, with the same nodes.
func (b *bench) writeTenants(t tenantsSpec) error {
	for i := range t.files() {
		if err := writeAppsGroup(filepath.Join(b.work, fmt.Sprintf("bt-%02d", i)), fmt.Sprintf("bt-%02d", i), tenantApps, t.nodes, b.run); err != nil {
			return err
		}
		for _, app := range tenantApps {
			name := fmt.Sprintf("btk-%02d-%s", i, app)
			if err := writeAppsGroup(filepath.Join(b.work, name), name, []string{app}, t.nodes, b.run); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeAppsGroup writes group grp into dir: K nodes of each app, each with a tiny rootfs
// (new to the registry in every run, by run), a claim, a port served and published.
func writeAppsGroup(dir, grp string, apps []string, k int, run string) error {
	var y strings.Builder
	fmt.Fprintf(&y, "group: %s\ndefaults:\n  state: {size: 1Gi}\nnodes:\n", grp)
	for _, app := range apps {
		for i := range k {
			name := app + nodeName(i)
			root := filepath.Join(dir, "nodes", name, "rootfs", "etc")
			if err := os.MkdirAll(root, 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(root, "bench"), []byte(fmt.Sprintf("node %s run %s\n", name, run)), 0o644); err != nil {
				return err
			}
			fmt.Fprintf(&y, "  %s:\n    app: %s\n    image: {rootfs: nodes/%s/rootfs}\n    firewall: {served: [80], published: [80]}\n", name, app, name)
		}
	}
	return os.WriteFile(filepath.Join(dir, "slipway.yaml"), []byte(y.String()), 0o644)
}

// prepareTenants renders the peer's deployments (pushing their images), R at a time; the
// deployments of one peer group file one after the other, since render holds its state's lock.
func (b *bench) prepareTenants(ctx context.Context, t tenantsSpec) error {
	byDir := map[string][]tenantDep{}
	var dirs []string
	for _, d := range t.deps() {
		if byDir[d.peerDir] == nil {
			dirs = append(dirs, d.peerDir)
		}
		byDir[d.peerDir] = append(byDir[d.peerDir], d)
	}
	errs := make([]error, len(dirs))
	forEach(len(dirs), t.runs, func(i int) {
		for _, d := range byDir[dirs[i]] {
			if errs[i] = b.renderTo(ctx, filepath.Join(b.work, d.peerDir), d.peerNS, b.peerFile(d), true); errs[i] != nil {
				return
			}
		}
	})
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	log.Printf("peer's objects of %d deployments rendered, their images pushed", len(t.deps()))
	return nil
}

func (b *bench) peerFile(d tenantDep) string { return filepath.Join(b.work, d.peerNS+".yaml") }

// forEach calls fn(0..n-1), at most par at a time.
func forEach(n, par int, fn func(int)) {
	work := make(chan int)
	var wg sync.WaitGroup
	for range par {
		wg.Go(func() {
			for i := range work {
				fn(i)
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
}

// runOut is one run of a batch: its wall time and error, and its log.
type runOut struct {
	wall float64
	err  error
	log  string
}

// batch runs cmds(i) for every deployment, R at a time (each its commands in turn, stopping
// at a failure), and records it as one step: the wall time of the whole batch and the
// requests of every run, counted at the proxy. after(i, end) runs when deployment i's
// commands succeeded.
func (b *bench) batch(ctx context.Context, tool, name string, t tenantsSpec, cmds func(tenantDep) []*exec.Cmd, after func(i int, end time.Time)) (Step, []runOut) {
	deps := t.deps()
	outs := make([]runOut, len(deps))
	s := Step{Tool: tool, Step: name}
	m := b.startMeasure(ctx)
	s.Start = m.t0
	forEach(len(deps), t.runs, func(i int) {
		path := filepath.Join(b.work, fmt.Sprintf("%02d-%s-%s.log", len(b.res.Steps), tool, deps[i].ns))
		f, err := os.Create(path)
		if err != nil {
			outs[i].err = err
			return
		}
		defer f.Close()
		start := time.Now()
		for _, cmd := range cmds(deps[i]) {
			fmt.Fprintf(f, "$ %s %s\n", filepath.Base(cmd.Path), strings.Join(cmd.Args[1:], " "))
			cmd.Env, cmd.Stdout, cmd.Stderr = b.toolEnv, f, f
			if err := cmd.Run(); err != nil {
				outs[i].err = err
				break
			}
		}
		end := time.Now()
		outs[i].wall, outs[i].log = end.Sub(start).Seconds(), path
		if outs[i].err == nil && after != nil {
			after(i, end)
		}
	})
	b.endMeasure(ctx, m, &s)
	failed := 0
	for _, o := range outs {
		if o.err != nil {
			failed++
		}
	}
	if failed > 0 {
		s.Error = fmt.Sprintf("%d of %d runs failed", failed, len(outs))
	}
	log.Printf("%-8s %-36s %8.2fs CPU (cluster %s)  %d requests, %d writes %s", tool, name, s.WallSeconds, cpuText(s.ClusterCPU), total(s.Requests), s.Writes, s.Error)
	b.res.Steps = append(b.res.Steps, s)
	return s, outs
}

// slipwayCmd is slipway verb args for deployment d, in its group file's directory.
func (b *bench) slipwayCmd(ctx context.Context, d tenantDep, verb ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, b.slipway, append(verb, "--target", d.app, "--deployment-id", d.id)...)
	cmd.Dir = filepath.Join(b.work, d.dir)
	return cmd
}

// runTenants measures slipway's first apply of every deployment, R runs at once, its floor,
// lost locks and cross writes; the peer's apply + wait with the same concurrency and its
// floor; slipway's no-op of every deployment; then both tools' removal.
func (b *bench) runTenants(ctx context.Context, t tenantsSpec) {
	b.n = t.nodes // the Deployments floorTimes finds in each namespace
	b.res.Nodes = t.deployments * t.nodes
	b.res.Tenants = &TenantsResult{Deployments: t.deployments, Nodes: t.nodes, Runs: t.runs}
	if err := b.writeTenants(t); err != nil {
		log.Fatal(err)
	}
	if err := b.prepareTenants(ctx, t); err != nil {
		log.Fatal(err)
	}
	deps := t.deps()
	seen := make([]nsView, len(deps))
	ends := make([]time.Time, len(deps))
	first, outs := b.batch(ctx, "slipway", firstApplyStep, t, func(d tenantDep) []*exec.Cmd {
		return []*exec.Cmd{b.slipwayCmd(ctx, d, "apply", "--yes")}
	}, func(i int, end time.Time) {
		ends[i] = end
		v, err := b.readNS(ctx, deps[i].ns)
		if err != nil {
			log.Printf("read %s after its apply: %v", deps[i].ns, err)
		}
		seen[i] = v
	})
	b.tally(outs, "first apply")
	if first.Error == "" {
		b.tenantsFloor(ctx, "slipway", deps, func(d tenantDep) string { return d.ns })
	}
	b.crossWrites(ctx, deps, seen, ends)

	kubectl := b.env.Kubectl()
	peer, _ := b.batch(ctx, "kubectl", "apply --server-side + wait", t, func(d tenantDep) []*exec.Cmd {
		return []*exec.Cmd{
			exec.CommandContext(ctx, kubectl, "apply", "--server-side", "-f", b.peerFile(d)),
			exec.CommandContext(ctx, kubectl, "wait", "-n", d.peerNS, "--for=condition=Available", "deployment", "--all", "--timeout="+b.waitLimit.String()),
		}
	}, nil)
	if peer.Error == "" {
		b.tenantsFloor(ctx, "kubectl", deps, func(d tenantDep) string { return d.peerNS })
		b.res.Floors["kubectl apply + wait"] = peer.WallSeconds
	}

	_, outs = b.batch(ctx, "slipway", "no-op apply", t, func(d tenantDep) []*exec.Cmd {
		return []*exec.Cmd{b.slipwayCmd(ctx, d, "apply", "--yes")}
	}, nil)
	b.tally(outs, "no-op apply")
	_, outs = b.batch(ctx, "slipway", "destroy", t, func(d tenantDep) []*exec.Cmd {
		return []*exec.Cmd{b.slipwayCmd(ctx, d, "destroy", "--yes")}
	}, nil)
	b.tally(outs, "destroy")
	b.batch(ctx, "kubectl", "delete namespace (wait)", t, func(d tenantDep) []*exec.Cmd {
		return []*exec.Cmd{exec.CommandContext(ctx, kubectl, "delete", "namespace", d.peerNS, "--wait=true", "--timeout="+b.waitLimit.String())}
	}, nil)
}

// tally counts a batch's failed runs and those that failed on a lock (lost locks), from
// their logs, into the result.
func (b *bench) tally(outs []runOut, step string) {
	tr := b.res.Tenants
	for _, o := range outs {
		if o.err == nil {
			continue
		}
		tr.Failed++
		data, _ := os.ReadFile(o.log)
		if strings.Contains(strings.ToLower(string(data)), "lock") {
			tr.LostLocks++
		}
		b.note(fmt.Sprintf("%s: a run failed: %v (log %s): %s", step, o.err, o.log, tail(string(data), 3)))
	}
	if step == "first apply" {
		for _, o := range outs {
			tr.RunSeconds = append(tr.RunSeconds, o.wall)
		}
		slices.Sort(tr.RunSeconds)
	}
}

// tenantsFloor is the cluster's floor of a tool's deployments (floorOver their namespaces).
func (b *bench) tenantsFloor(ctx context.Context, tool string, deps []tenantDep, ns func(tenantDep) string) {
	var namespaces []string
	for _, d := range deps {
		namespaces = append(namespaces, ns(d))
	}
	b.floorOver(ctx, tool, namespaces)
}

// printTenants prints the steps and slipway's figures against the floor and the goals of
// issue 46.
func (b *bench) printTenants(out io.Writer, t tenantsSpec) {
	m := b.res.Machine
	tr := b.res.Tenants
	fmt.Fprintf(out, "\n%d deployments of %d nodes, %d runs at once; %d CPUs, %s memory, %s, load %s\n\n", t.deployments, t.nodes, t.runs, m.NProc, m.MemoryGiB, m.Go, m.Load)
	fmt.Fprintf(out, "| tool | step | wall s | own requests by verb | own writes |\n|---|---|---:|---|---:|\n")
	for _, s := range b.res.Steps {
		wall := fmt.Sprintf("%.2f", s.WallSeconds)
		if s.Error != "" {
			wall += " (" + s.Error + ")"
		}
		fmt.Fprintf(out, "| %s | %s | %s | %s | %d |\n", s.Tool, s.Step, wall, verbs(s.Requests), s.Writes)
	}
	if n := len(tr.RunSeconds); n > 0 {
		fmt.Fprintf(out, "\nslipway's first apply, one run: median %.2f s, slowest %.2f s\n", tr.RunSeconds[n/2], tr.RunSeconds[n-1])
	}
	fmt.Fprintf(out, "cluster floor of slipway's objects %.0f s, of kubectl's %.0f s; runs failed %d, lost locks %d, cross writes %d, other changes %d\n",
		b.res.Floors["slipway"], b.res.Floors["kubectl"], tr.Failed, tr.LostLocks, tr.CrossWrites, tr.OtherChanges)
	first := b.find("slipway", firstApplyStep)
	for _, peer := range []string{"slipway", "kubectl", "kubectl apply + wait"} {
		f, ok := b.res.Floors[peer]
		if first == nil || !ok || f == 0 {
			continue
		}
		b.res.Ratios = append(b.res.Ratios, Ratio{Step: firstApplyStep, Peer: peer, Slipway: first.WallSeconds, Other: f, Ratio: first.WallSeconds / f})
	}
	if f, ok := b.res.Floors["slipway"]; ok && first != nil && f > 0 {
		r := first.WallSeconds / f
		b.res.Targets = append(b.res.Targets, Target{Goal: "first apply <= 1.2 x the cluster's floor of its objects", Value: fmt.Sprintf("%.2f x", r), Met: r <= 1.2})
	}
	b.res.Targets = append(b.res.Targets,
		Target{Goal: "0 lost locks", Value: fmt.Sprint(tr.LostLocks), Met: tr.LostLocks == 0},
		Target{Goal: "0 cross writes", Value: fmt.Sprint(tr.CrossWrites), Met: tr.CrossWrites == 0})
	for _, r := range b.res.Ratios {
		fmt.Fprintf(out, "first apply %.2f s / %s %.2f s = %.2f\n", r.Slipway, r.Peer, r.Other, r.Ratio)
	}
	for _, t := range b.res.Targets {
		fmt.Fprintf(out, "goal %-60s %-12s met: %v\n", t.Goal, t.Value, t.Met)
	}
	for _, n := range b.res.Notes {
		fmt.Fprintf(out, "note: %s\n", n)
	}
}
