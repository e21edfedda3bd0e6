package main

// Counting: each step runs through the counting proxy (the tool's own requests) and between
// two reads of the API server's metrics (every client's).

import (
	"bufio"
	"context"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"slipway.dev/slipway/internal/devcluster/devtest"
)

// step runs one command through the proxy and records it. kubectl diff exits 1 when it finds
// differences: that is recorded as an error too, since after a no-op there should be none.
func (b *bench) step(ctx context.Context, tool, name, bin string, args ...string) Step {
	return b.stepEnv(ctx, nil, tool, name, bin, args...)
}

// stepEnv is step with extra environment variables for the command.
func (b *bench) stepEnv(ctx context.Context, env []string, tool, name, bin string, args ...string) Step {
	s := Step{Tool: tool, Step: name, Repeat: b.repeat}
	logf, err := os.Create(filepath.Join(b.work, fmt.Sprintf("%02d-%s.log", len(b.res.Steps), tool)))
	if err != nil {
		log.Fatal(err)
	}
	defer logf.Close()
	fmt.Fprintf(logf, "$ %s %s\n", filepath.Base(bin), strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = b.work
	cmd.Env = append(slices.Clip(b.toolEnv), env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	m := b.startMeasure(ctx)
	s.Start, s.Log = m.t0, logf.Name()
	// The kernel's high-water mark of the child's resident set (wait4's rusage): measured by
	// the kernel over the whole run, so no sample can miss a peak.
	s.PeakRSSMB, s.ParentRSSMB, s.CPUSeconds, err = runMeasured(cmd)
	b.endMeasure(ctx, m, &s)
	if err != nil {
		s.Error = fmt.Sprintf("%v (log %s)", err, logf.Name())
	}
	log.Printf("%-8s %-36s %8.2fs %6.0f MB (bench %.0f MB) CPU %.2fs (cluster %s)  %d requests, %d writes %s", tool, name, s.WallSeconds, s.PeakRSSMB, s.ParentRSSMB, s.CPUSeconds, cpuText(s.ClusterCPU), total(s.Requests), s.Writes, s.Error)
	b.res.Steps = append(b.res.Steps, s)
	return s
}

// measure is what a step counts from its start to its end: its wall time, the cluster's
// CPU, the requests the proxy saw and the API server's own count of requests by verb.
type measure struct {
	t0     time.Time
	cpu0   map[string]float64
	before map[string]float64
	merr   error
}

// startMeasure starts counting a step: the proxy's count starts again from zero.
func (b *bench) startMeasure(ctx context.Context) measure {
	before, merr := b.metrics(ctx)
	b.proxy.Reset()
	return measure{t0: time.Now(), cpu0: clusterCPU(b.env), before: before, merr: merr}
}

// endMeasure writes into s what was counted since m started. The API server's counts are
// left out when either reading of its metrics failed.
func (b *bench) endMeasure(ctx context.Context, m measure, s *Step) {
	s.WallSeconds = time.Since(m.t0).Seconds()
	s.ClusterCPU = cpuSince(m.cpu0, clusterCPU(b.env))
	s.Requests, s.Writes = ownRequests(b.proxy.Requests())
	if after, err := b.metrics(ctx); err == nil && m.merr == nil {
		s.Cluster = map[string]int{}
		for v, n := range after {
			if d := int(n - m.before[v]); d != 0 {
				s.Cluster[v] = d
			}
		}
	}
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
