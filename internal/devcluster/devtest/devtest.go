// Package devtest gives tests the dev cluster of SPEC §10. Env reuses the cluster running in
// $SLIPWAY_DEV_DIR (or the default directory) and otherwise starts it, under a file lock, so
// `go test ./...` needs nothing started by hand and the package binaries that run in parallel
// share one cluster instead of each building their own on a 2-core machine. A cluster a test
// started is left running for the next test binary; `slipway dev down` stops it.
package devtest

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"slipway.dev/slipway/internal/devcluster"
)

var (
	once sync.Once
	env  *devcluster.Env
	err  error
)

// Env returns the running dev cluster, starting it when none runs. It fails the test when the
// cluster cannot start: these are tests of the real thing, never skipped.
func Env(t testing.TB) *devcluster.Env {
	t.Helper()
	once.Do(func() {
		// A cold start builds the binaries (about 7 minutes on 2 cores).
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
		defer cancel()
		env, _, err = devcluster.Up(ctx, devcluster.Options{Progress: os.Stderr})
	})
	if err != nil {
		t.Fatalf("dev cluster: %v", err)
	}
	return env
}

var (
	spireOnce sync.Once
	spire     *devcluster.Spire
	spireErr  error
)

// Spire returns the running dev cluster and its SPIRE parts (dev up --spire), starting
// whichever is missing: the first time SPIRE builds for about 8 minutes on 2 cores. It fails
// the test when they cannot start.
func Spire(t testing.TB) (*devcluster.Env, *devcluster.Spire) {
	t.Helper()
	spireOnce.Do(func() {
		var e *devcluster.Env
		if e, spireErr = addPart(devcluster.Options{Spire: true}); spireErr == nil {
			spire, spireErr = e.Spire()
		}
	})
	if spireErr != nil {
		t.Fatalf("dev cluster: SPIRE: %v", spireErr)
	}
	return Env(t), spire
}
