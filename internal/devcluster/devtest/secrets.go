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
	secretsOnce sync.Once
	secretsEnv  *devcluster.Env
	secretsErr  error
)

// Secrets returns the running dev cluster with its secrets server (dev up --secrets: Vault in
// memory, KV v2 and kubernetes auth), adding the server when it does not run (its first
// build takes about 13 minutes on 2 busy cores; .ci/test asks for it before the tests). It
// fails the test when the server cannot start: never a skip.
func Secrets(t testing.TB) *devcluster.Env {
	t.Helper()
	secretsOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
		defer cancel()
		secretsEnv, _, secretsErr = devcluster.Up(ctx, devcluster.Options{Progress: os.Stderr, Secrets: true})
	})
	if secretsErr != nil {
		t.Fatalf("dev cluster with its secrets server: %v", secretsErr)
	}
	if secretsEnv.OpenBaoAddr == "" {
		t.Fatalf("dev cluster in %s: no secrets server recorded after dev up --secrets", secretsEnv.Dir)
	}
	return secretsEnv
}
