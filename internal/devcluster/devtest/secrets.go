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
		secretsEnv, secretsErr = addPart(devcluster.Options{Secrets: true})
	})
	if secretsErr != nil {
		t.Fatalf("dev cluster with its secrets server: %v", secretsErr)
	}
	if secretsEnv.OpenBaoAddr == "" {
		t.Fatalf("dev cluster in %s: no secrets server recorded after dev up --secrets", secretsEnv.Dir)
	}
	return secretsEnv
}

// addPart runs dev up with opts (a part added to the running cluster, built first when
// missing), with room for a cold build of the part and its progress on stderr.
func addPart(opts devcluster.Options) (*devcluster.Env, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	opts.Progress = os.Stderr
	e, _, err := devcluster.Up(ctx, opts)
	return e, err
}
