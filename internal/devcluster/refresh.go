package devcluster

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// ensureKwokConfig restarts kwok on a running cluster whose kwok config is not this slipway's
// (kwok keeps no state: the nodes' leases and the objects' statuses are in the API server), so
// a change of the simulation reaches a cluster started by an older slipway without stopping it.
func (e *Env) ensureKwokConfig(ctx context.Context, progress io.Writer) error {
	cache, err := CacheDir()
	if err != nil {
		return err
	}
	stages, err := ensureStages(ctx, cache)
	if err != nil {
		return err
	}
	want, err := kwokConfig(stages, e.volumesDir())
	if err != nil {
		return err
	}
	pid, running := e.ourPID("kwok")
	sameFlags := true
	if running {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		sameFlags = err != nil || runsWith(b, e.kwokArgs())
	}
	if have, err := os.ReadFile(filepath.Join(e.Dir, kwokConfigFile)); err == nil && bytes.Equal(have, want) && sameFlags {
		return nil
	}
	fmt.Fprintln(progress, "dev: restarting kwok with this slipway's stages and flags")
	if running {
		stopPID(pid, 5*time.Second)
	}
	return e.startKwok(stages)
}

// ensureControllers restarts, on a running cluster, each controller whose process runs with
// other flags than this slipway gives it.
func (e *Env) ensureControllers(progress io.Writer) error {
	for _, c := range e.controllers() {
		pid, ok := e.ourPID(c.name)
		if !ok {
			continue // not ours to restart: the health check speaks for a missing one
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || runsWith(b, c.args) {
			continue
		}
		fmt.Fprintf(progress, "dev: restarting %s with this slipway's flags\n", c.name)
		stopPID(pid, 10*time.Second)
		if _, err := e.startProcess(c.name, c.args); err != nil {
			return err
		}
	}
	return nil
}

// runsWith reports whether a /proc/<pid>/cmdline (NUL-separated, the executable first) holds
// exactly args after the executable.
func runsWith(cmdline []byte, args []string) bool {
	have := strings.Split(strings.TrimSuffix(string(cmdline), "\x00"), "\x00")
	return len(have) > 0 && slices.Equal(have[1:], args)
}

// ensureRegistryConfig restarts the registry of a running cluster whose configuration is not
// this slipway's; what it stores is on disk, and its address stays.
func (e *Env) ensureRegistryConfig(ctx context.Context, progress io.Writer) error {
	want := e.registryConfig()
	if have, err := os.ReadFile(filepath.Join(e.Dir, "registry.yaml")); err == nil && bytes.Equal(have, want) {
		return nil
	}
	pid, ok := e.ourPID("registry")
	if !ok {
		return nil // not ours to restart: the health check speaks for a missing one
	}
	fmt.Fprintln(progress, "dev: restarting the registry with this slipway's configuration")
	stopPID(pid, 10*time.Second)
	if err := e.startRegistry(); err != nil {
		return err
	}
	return e.waitHTTP(ctx, "registry", "http://"+e.Registry+"/v2/", time.Minute)
}

// ourPID is the PID recorded for component name (pids/<name>), when it runs a binary of ours.
func (e *Env) ourPID(name string) (int, bool) {
	pid, err := readPID(filepath.Join(e.Dir, "pids", name))
	return pid, err == nil && ourProcess(pid, e.BinDir)
}
