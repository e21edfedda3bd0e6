package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"slipway.dev/slipway/internal/devcluster/devtest"
)

// serviceFile reads /run/secrets/<name> inside pod's service container, waiting while the
// exec fails (a container restarting refuses it): an exec's error text is never taken for
// the file's content.
func (g *Group) serviceFile(pod, name string) string {
	g.t.Helper()
	var content string
	devtest.WaitFor(g.t, time.Minute, "read "+name+" in pod "+pod, func() (bool, string) {
		out, ok := g.execIn(pod, "service", "cat", "/run/secrets/"+name)
		if !ok {
			return false, "exec failed: " + out
		}
		content = out
		return true, ""
	})
	return content
}

// writeMarks is what any write to the deployment's central objects changes: the xmin (the
// transaction that wrote the row's version) of each role's and database's catalog row and of
// their comments; each static role's last rotation; each KV entry's version and update time.
// Two equal results mean nothing was written in between.
func (c *centralServers) writeMarks(t *testing.T, admin *pgx.Conn, id string, names []string, entries ...string) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	queries := map[string]string{
		"role":             `SELECT rolname, xmin::text FROM pg_authid WHERE rolname = ANY($1)`,
		"database":         `SELECT datname, xmin::text FROM pg_database WHERE datname = ANY($1)`,
		"role comment":     `SELECT a.rolname, d.xmin::text FROM pg_shdescription d JOIN pg_authid a ON a.oid = d.objoid WHERE a.rolname = ANY($1)`,
		"database comment": `SELECT b.datname, d.xmin::text FROM pg_shdescription d JOIN pg_database b ON b.oid = d.objoid WHERE b.datname = ANY($1)`,
	}
	for what, q := range queries {
		rows, err := admin.Query(ctx, q, names)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		for rows.Next() {
			var n, x string
			if err := rows.Scan(&n, &x); err != nil {
				t.Fatal(err)
			}
			out[what+" "+n] = "xmin " + x
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range names {
		r, err := c.srv.c.Logical().Read("database/static-roles/" + n)
		if err != nil || r == nil {
			t.Fatalf("static role %s: %v", n, err)
		}
		out["static role "+n] = fmt.Sprint(r.Data["last_vault_rotation"], " ", r.Data["rotation_period"])
	}
	for _, e := range entries {
		r, err := c.srv.c.Logical().Read("secret/metadata/slipway/" + id + "/" + e)
		if err != nil || r == nil {
			t.Fatalf("entry %s: %v", e, err)
		}
		out["entry "+e] = fmt.Sprint("version ", r.Data["current_version"], " updated ", r.Data["updated_time"])
	}
	if len(out) != 5*len(names)+len(entries) {
		t.Fatalf("write marks: %d found, want %d: %s", len(out), 5*len(names)+len(entries), strings.Join(slices.Sorted(maps.Keys(out)), ", "))
	}
	return out
}
