package central

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"slipway.dev/slipway/internal/devcluster/devtest"
	"slipway.dev/slipway/internal/spec"
)

// TestFiftyDatabases measures the lane against the dev environment's PostgreSQL and secrets
// server (dev up --secrets --central), for BENCHMARKS.md: the first plan and apply of 50
// logins and databases (with their static roles), then a plan and a no-op apply: requests,
// writes, time. The figures are logged as `bench:` lines.
func TestFiftyDatabases(t *testing.T) {
	env := devtest.Env(t)
	for _, line := range strings.Split(env.Exports(), "\n") {
		rest, ok := strings.CutPrefix(line, "export ")
		if !ok {
			continue
		}
		for _, kv := range strings.Fields(rest) {
			if k, v, ok := strings.Cut(kv, "="); ok && (strings.HasPrefix(k, "SLIPWAY_") || k == "PGPASSFILE") {
				t.Setenv(k, v)
			}
		}
	}
	if env.PostgresHost == "" {
		t.Fatalf("the dev environment in %s has no PostgreSQL: start it with `slipway dev up --secrets --central`", env.Dir)
	}
	ctx := context.Background()
	pg, bao, err := Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	c := &spec.Central{DatabaseMount: "database", Connection: "postgresql", KVMount: "secret"}
	for i := range 50 {
		k := fmt.Sprintf("db%02d", i)
		c.Logins = append(c.Logins, spec.CentralLogin{Key: k, ConnectionLimit: -1, Rotation: time.Hour})
		c.Databases = append(c.Databases, spec.CentralDatabase{Key: k, Owner: k})
	}
	id := fmt.Sprintf("bench%d", time.Now().UnixNano()%1e6)
	l := &Lane{Central: c, Identity: id, PG: pg, Bao: bao, Value: Value, Random: Random}
	t.Cleanup(func() {
		if p, err := l.PlanDestroy(ctx, false); err == nil {
			_ = l.Apply(ctx, p.Changes)
		}
	})
	step := func(what string, f func() int) {
		q, r, w := pg.Queries, bao.Reads, bao.Writes
		start := time.Now()
		n := f()
		t.Logf("bench: %s of 50 databases: %d changes, %s, PostgreSQL %d statements/queries, OpenBao %d reads, %d writes",
			what, n, time.Since(start).Round(time.Millisecond), pg.Queries-q, bao.Reads-r, bao.Writes-w)
	}
	var planned *Planned
	plan := func() int {
		if planned, err = l.Plan(ctx, false); err != nil {
			t.Fatal(err)
		}
		return len(planned.Changes)
	}
	step("first plan", plan)
	step("first apply", func() int {
		if err := l.Apply(ctx, planned.Changes); err != nil {
			t.Fatal(err)
		}
		return len(planned.Changes)
	})
	step("plan after apply", plan)
	if len(planned.Changes) != 0 {
		t.Fatalf("plan after apply: %d changes", len(planned.Changes))
	}
	step("no-op apply (plan, then nothing to apply)", func() int {
		plan()
		if err := l.Apply(ctx, planned.Changes); err != nil {
			t.Fatal(err)
		}
		return len(planned.Changes)
	})
	step("destroy", func() int {
		p, err := l.PlanDestroy(ctx, false)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Apply(ctx, p.Changes); err != nil {
			t.Fatal(err)
		}
		return len(p.Changes)
	})
}
