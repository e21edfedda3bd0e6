package e2e

// The central lane's cost for BENCHMARKS.md (issue 44), against the dev environment's
// PostgreSQL and secrets server (dev up --secrets --central): 50 logins and databases with
// their static roles. It drives the lane itself, whose connections count what they send.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"slipway.dev/slipway/internal/engine/central"
	"slipway.dev/slipway/internal/spec"
)

// TestCentralFiftyDatabases: the first plan and apply of 50 logins and databases, then a plan
// and a no-op apply (which must find no change and write nothing: no statement that may write
// to PostgreSQL, no write to OpenBao), then destroy, each logged as a `bench:` line with its
// time, PostgreSQL statements and OpenBao reads and writes. The peer runs the plan's reads
// without slipway: psql with the plan's two catalog queries, and one curl reading the 50
// static roles and the list of entries over one connection.
func TestCentralFiftyDatabases(t *testing.T) {
	cs := realCentral(t)
	for _, kv := range cs.env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	ctx := context.Background()
	pg, bao, err := central.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	c := &spec.Central{DatabaseMount: "database", Connection: "postgresql", KVMount: "secret"}
	var names []string
	id := fmt.Sprintf("bench%d", time.Now().UnixNano()%1e6)
	for i := range 50 {
		k := fmt.Sprintf("db%02d", i)
		c.Logins = append(c.Logins, spec.CentralLogin{Key: k, ConnectionLimit: -1, Rotation: time.Hour})
		c.Databases = append(c.Databases, spec.CentralDatabase{Key: k, Owner: k})
		names = append(names, spec.CentralName(id, k))
	}
	l := &central.Lane{Central: c, Identity: id, PG: pg, Bao: bao, Value: central.Value, Random: central.Random}
	t.Cleanup(func() {
		if p, err := l.PlanDestroy(ctx, false); err == nil {
			_ = l.Apply(ctx, p.Changes)
		}
	})
	step := func(what string, f func() int) (time.Duration, int, int) {
		q, s, r, w := pg.Queries, pg.Statements, bao.Reads, bao.Writes
		start := time.Now()
		n := f()
		d := time.Since(start)
		t.Logf("bench: %s of 50 databases: %d changes, %s, PostgreSQL %d statements/queries (%d that may write), OpenBao %d reads, %d writes",
			what, n, d.Round(time.Millisecond), pg.Queries-q, pg.Statements-s, bao.Reads-r, bao.Writes-w)
		return d, pg.Statements - s, bao.Writes - w
	}
	var planned *central.Planned
	plan := func() int {
		if planned, err = l.Plan(ctx, false); err != nil {
			t.Fatal(err)
		}
		return len(planned.Changes)
	}
	step("first plan", plan)
	if len(planned.Changes) != 150 {
		t.Fatalf("first plan: %d changes, want 150 (50 logins, static roles, databases)", len(planned.Changes))
	}
	step("first apply", func() int {
		if err := l.Apply(ctx, planned.Changes); err != nil {
			t.Fatal(err)
		}
		return len(planned.Changes)
	})
	// Five rounds, each a plan, a no-op apply and the peer, in turn; the medians are the
	// figures (the machine is shared, one run is noisy).
	var plans, noops, peers []time.Duration
	for range 5 {
		d, stmts, writes := step("plan after apply", plan)
		if len(planned.Changes) != 0 || stmts != 0 || writes != 0 {
			t.Fatalf("plan after apply: %d changes, %d statements that may write, %d OpenBao writes; want none", len(planned.Changes), stmts, writes)
		}
		plans = append(plans, d)
		d, stmts, writes = step("no-op apply (plan, then nothing to apply)", func() int {
			plan()
			if err := l.Apply(ctx, planned.Changes); err != nil {
				t.Fatal(err)
			}
			return len(planned.Changes)
		})
		if len(planned.Changes) != 0 || stmts != 0 || writes != 0 {
			t.Fatalf("no-op apply: %d changes, %d statements that may write, %d OpenBao writes; want none", len(planned.Changes), stmts, writes)
		}
		noops = append(noops, d)
		peers = append(peers, peerCentralReads(t, cs, id, names))
	}
	plan5, noop5, peer5 := median(plans), median(noops), median(peers)
	t.Logf("bench: medians of 5: plan %s, no-op apply %s; peer (psql: the 2 catalog queries; curl: 50 static roles and 1 list, one connection) %s (runs %v); slipway's plan / peer: %.2f",
		plan5.Round(time.Millisecond), noop5.Round(time.Millisecond), peer5.Round(time.Millisecond), peers, plan5.Seconds()/peer5.Seconds())
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
	admin := cs.admin(t, "postgres")
	for _, n := range names {
		if exists(t, admin, "database", n) || exists(t, admin, "role", n) {
			t.Errorf("after destroy: %s is still there", n)
		}
	}
}

// peerCentralReads runs what the lane's plan reads without slipway and returns the wall time
// of both tools: psql (PREPARE then EXECUTE of the same two catalog queries) and curl (a
// config file with the token header and the same OpenBao paths, over one connection). Both
// must succeed and answer each read.
func peerCentralReads(t *testing.T, cs *centralServers, id string, names []string) time.Duration {
	t.Helper()
	dir := t.TempDir()
	arr := "ARRAY['" + strings.Join(names, "','") + "']"
	mark := "'" + spec.CentralOwner(id) + "'"
	sql := fmt.Sprintf("PREPARE r(text[], text) AS %s;\nPREPARE d(text[], text) AS %s;\nEXECUTE r(%s, %s);\nEXECUTE d(%s, %s);\n",
		central.RolesQuery, central.DatabasesQuery, arr, mark, arr, mark)
	tok, err := os.ReadFile(cs.vars["SLIPWAY_OPENBAO_TOKEN_FILE"])
	if err != nil {
		t.Fatal(err)
	}
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "silent\nshow-error\nfail\ncacert = %q\nheader = \"X-Vault-Token: %s\"\nwrite-out = \"%%{http_code}\\n\"\n",
		cs.vars["SLIPWAY_OPENBAO_CA_FILE"], strings.TrimSpace(string(tok)))
	paths := []string{}
	for _, n := range names {
		paths = append(paths, "database/static-roles/"+n)
	}
	paths = append(paths, "secret/metadata/slipway/"+id+"?list=true")
	for _, p := range paths {
		fmt.Fprintf(&cfg, "url = %q\noutput = \"/dev/null\"\n", cs.vars["SLIPWAY_OPENBAO_ADDR"]+"/v1/"+p)
	}
	curlCfg := filepath.Join(dir, "curl.conf")
	if err := os.WriteFile(curlCfg, []byte(cfg.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	psql := exec.Command("psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-f", "-", cs.vars["SLIPWAY_POSTGRESQL_URL"])
	psql.Stdin = strings.NewReader(sql)
	psql.Env = append(os.Environ(), "PGPASSFILE="+cs.vars["PGPASSFILE"])
	curl := exec.Command("curl", "-K", curlCfg)
	start := time.Now()
	rows, err := psql.Output()
	if err != nil {
		t.Fatalf("peer psql: %v", err)
	}
	codes, err := curl.Output()
	took := time.Since(start)
	// The list of an identity without entries answers 404, as the lane reads it.
	if err != nil && !strings.Contains(err.Error(), "exit status 22") {
		t.Fatalf("peer curl: %v", err)
	}
	if n := strings.Count(string(rows), "\n"); n != 100 {
		t.Errorf("peer psql: %d rows, want 100 (50 roles, 50 databases)", n)
	}
	if n := strings.Count(string(codes), "200\n"); n != 50 {
		t.Errorf("peer curl: %d reads answered 200, want 50: %q", n, codes)
	}
	return took
}

// median is the middle of d (sorted in place).
func median(d []time.Duration) time.Duration {
	slices.Sort(d)
	return d[len(d)/2]
}
