package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"slipway.dev/slipway/internal/devcluster"
)

// clockTicks is the kernel's USER_HZ, the unit of /proc/<pid>/stat's times: 100 on Linux.
const clockTicks = 100

// clusterCPU reads the CPU (user + system, seconds) each process of the dev cluster env has
// spent, by the component names of its pid files; nil without a dev cluster. A step's share
// is the difference over it (cpuSince): what the API server, the registry, kwok and the
// controllers spent on the cores the measured command shares.
func clusterCPU(env *devcluster.Env) map[string]float64 {
	if env == nil {
		return nil
	}
	pids := env.PIDs()
	if pids == nil {
		return nil
	}
	out := map[string]float64{}
	for name, pid := range pids {
		if cpu, ok := processCPU(strconv.Itoa(pid)); ok {
			out[name] = cpu
		}
	}
	return out
}

// processCPU is utime + stime of /proc/<pid>/stat, seconds.
func processCPU(pid string) (float64, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		return 0, false
	}
	// The command name (field 2) is in parentheses and may hold spaces: count from after it.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3 (state): utime is field 14, stime 15
	if len(f) < 13 {
		return 0, false
	}
	u, err1 := strconv.ParseFloat(f[11], 64)
	st, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return (u + st) / clockTicks, true
}

// cpuSince is after − before per component, the components of both only.
func cpuSince(before, after map[string]float64) map[string]float64 {
	if before == nil || after == nil {
		return nil
	}
	out := map[string]float64{}
	for k, a := range after {
		if b, ok := before[k]; ok && a >= b {
			out[k] = a - b
		}
	}
	return out
}

// cpuText is "kube-apiserver 0.21, registry 0.35, …" by descending CPU, its three largest
// and the rest summed; "—" when unknown.
func cpuText(m map[string]float64) string {
	if len(m) == 0 {
		return "—"
	}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.SortFunc(names, func(a, b string) int {
		if m[a] != m[b] {
			if m[a] > m[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	var parts []string
	rest := 0.0
	for i, n := range names {
		if i < 3 {
			parts = append(parts, fmt.Sprintf("%s %.2f", n, m[n]))
		} else {
			rest += m[n]
		}
	}
	if len(names) > 3 {
		parts = append(parts, fmt.Sprintf("others %.2f", rest))
	}
	return strings.Join(parts, ", ")
}

// settle waits, up to limit, until the dev cluster env spends at most maxCores of CPU over a window
// (its controllers and kwok finish the work a first apply gave them: at 1,000 nodes a plan
// right after the apply took 2.5 s, 60 s later 1.5 s, issue 17), and returns how long it waited
// and the cluster's last rate, cores. Without a dev cluster it returns at once.
func settle(ctx context.Context, env *devcluster.Env, maxCores float64, window, limit time.Duration) (time.Duration, float64) {
	start := time.Now()
	prev := clusterCPU(env)
	if prev == nil {
		return 0, 0
	}
	rate := 0.0
	for time.Since(start) < limit {
		select {
		case <-ctx.Done():
			return time.Since(start), rate
		case <-time.After(window):
		}
		cur := clusterCPU(env)
		rate = 0
		for _, s := range cpuSince(prev, cur) {
			rate += s
		}
		rate /= window.Seconds()
		prev = cur
		if rate <= maxCores {
			break
		}
	}
	return time.Since(start), rate
}
