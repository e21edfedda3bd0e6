package devcluster

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestPostgresStartAcceptsSessions starts a PostgreSQL of its own (Debian's server in a user
// namespace, in a temporary directory: not the dev environment's) and opens a session as the
// admin through the passfile at once: ready means accepting sessions, not only listening
// (a listening server answers "the database system is starting up" for a while, which made
// the secrets server's verify_connection fail).
func TestPostgresStartAcceptsSessions(t *testing.T) {
	if _, err := postgresBin("postgres"); err != nil {
		t.Fatalf("Debian's postgresql package (.ci/packages) is not installed: %v", err)
	}
	testRunDir(t) // its Env claims a slot: in a directory of the test's own
	dir := t.TempDir()
	for _, d := range []string{"pids", "logs"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	e := &Env{Dir: dir}
	ctx := context.Background()
	if err := e.startPostgres(ctx, filepath.Join(dir, "postgresql"), "127.0.0.1"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !stopPostgres(dir) {
			t.Error("stopPostgres found no server")
		}
	})
	if fi, err := os.Stat(e.PostgresPassFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("passfile %s: %v %v, want mode 0600", e.PostgresPassFile, fi, err)
	}
	t.Setenv("PGPASSFILE", e.PostgresPassFile)
	url := "postgres://" + PostgresAdmin + "@127.0.0.1:" + strconv.Itoa(e.Ports[postgresProc]) + "/postgres?sslmode=disable"
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("session right after start: %v", err)
	}
	defer conn.Close(ctx)
	var super bool
	if err := conn.QueryRow(ctx, "select rolsuper from pg_roles where rolname = current_user").Scan(&super); err != nil || !super {
		t.Errorf("admin %s: superuser %v, %v", PostgresAdmin, super, err)
	}
}
