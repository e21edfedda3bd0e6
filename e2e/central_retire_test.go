package e2e

import (
	"context"
	"strings"
	"testing"
)

// The central lane's objects outlive the file's `central:` (issue 44): the state records that
// the lane made them, so a file without the section still plans, applies and destroys their
// removal, with the care of claims for a protected database.

const centralRetireGroup = `group: {{GROUP}}
nodes:
  a:
    image: {rootfs: nodes/a/rootfs}
`

const centralRetireSection = `central:
  logins: {a: {}}
  databases: {a: {owner: a{{PROTECT}}}}
  kv: {k: {generate: {length: 16}}}
`

// centralRetire is a group with the section (protect or not) applied, and its objects' names.
func centralRetire(t *testing.T, prefix string, protect bool) (*Group, *centralServers, string) {
	t.Helper()
	cs := realCentral(t)
	g := NewGroup(t, prefix, centralRetireGroup, "a")
	g.WithEnv(cs.env()...)
	g.centralSection(protect)
	name := g.Name + ".a"
	admin := cs.admin(t, "postgres")
	t.Cleanup(func() {
		_, _ = admin.Exec(context.Background(), `DROP DATABASE IF EXISTS "`+name+`" WITH (FORCE)`)
		_, _ = admin.Exec(context.Background(), `DROP ROLE IF EXISTS "`+name+`"`)
		_, _ = cs.srv.c.Logical().Delete("database/static-roles/" + name)
		_, _ = cs.srv.c.Logical().Delete("secret/metadata/slipway/" + g.Name + "/k")
	})
	g.MustRun(0, "apply", "--yes")
	if !exists(t, admin, "database", name) || !exists(t, admin, "role", name) {
		t.Fatalf("apply did not make database and login %s", name)
	}
	return g, cs, name
}

// centralSection writes the group file with `central:` (protect or not); without it when
// section is false.
func (g *Group) centralSection(protect bool) {
	s := strings.ReplaceAll(centralRetireSection, "{{PROTECT}}", map[bool]string{true: ", protect: true", false: ""}[protect])
	g.WriteFile("slipway.yaml", strings.ReplaceAll(centralRetireGroup, "{{GROUP}}", g.Name)+s)
}

// centralLeft lists which of the deployment's objects are still on the servers.
func (cs *centralServers) left(t *testing.T, g *Group, name string) []string {
	t.Helper()
	admin := cs.admin(t, "postgres")
	var out []string
	for _, what := range []string{"database", "role"} {
		if exists(t, admin, what, name) {
			out = append(out, what)
		}
	}
	if s, err := cs.srv.c.Logical().Read("database/static-roles/" + name); err != nil || s != nil {
		out = append(out, "static role")
	}
	if s, err := cs.srv.c.Logical().Read("secret/metadata/slipway/" + g.Name + "/k"); err != nil || s != nil {
		out = append(out, "kv entry")
	}
	return out
}

// TestCentralRemoved: `central:` removed from the file, plan lists the removal of every
// object, apply removes them, a second plan says No changes. Before that, a database last
// applied with protect stops the plan, --keep-claims would keep it, and lifting protect is an
// apply of its own.
func TestCentralRemoved(t *testing.T) {
	t.Parallel()
	g, cs, name := centralRetire(t, "central-rm", true)

	g.WriteFile("slipway.yaml", strings.ReplaceAll(centralRetireGroup, "{{GROUP}}", g.Name))
	if r := g.MustRun(1, "plan"); !strings.Contains(r.Stderr, name+" are no longer in the file but were last applied with protect") {
		t.Errorf("plan without central: of a protected database:\n%s", r)
	}
	if r := g.MustRun(2, "plan", "-detailed-exitcode", "--keep-claims"); !strings.Contains(r.Stdout+r.Stderr, "database "+name+" is no longer in the file and stays (--keep-claims)") ||
		strings.Contains(r.Stdout, "database "+name+":") {
		t.Errorf("plan --keep-claims without central: does not keep the database:\n%s", r)
	}
	g.centralSection(false) // lift protect: an apply of its own
	if r := g.MustRun(2, "plan", "-detailed-exitcode"); !strings.Contains(r.Stdout, "database "+name+": protect lifted") {
		t.Errorf("plan of protect unset:\n%s", r)
	}
	g.MustRun(0, "apply", "--yes")

	g.WriteFile("slipway.yaml", strings.ReplaceAll(centralRetireGroup, "{{GROUP}}", g.Name))
	p := g.MustRun(2, "plan", "-detailed-exitcode")
	for _, want := range []string{"static-role " + name, "database " + name + ": its data is lost", "login " + name, "kv secret/slipway/" + g.Name + "/k", "the file has no central: any more"} {
		if !strings.Contains(p.Stdout, want) {
			t.Errorf("plan without central: does not list %q:\n%s", want, p.Stdout)
		}
	}
	g.MustRun(0, "apply", "--yes")
	if left := cs.left(t, g, name); len(left) > 0 {
		t.Errorf("after apply without central: still there: %v", left)
	}
	if r := g.MustRun(0, "plan", "-detailed-exitcode"); !strings.Contains(r.Stdout, "No changes.") {
		t.Errorf("second plan:\n%s", r)
	}
	// The record is gone with the objects: no run needs the servers any more.
	g.WithEnv("SLIPWAY_POSTGRESQL_URL=")
	g.MustRun(0, "plan", "-detailed-exitcode")
	g.MustRun(0, "destroy", "--yes")
}

// TestCentralRemovedDestroy: `central:` removed, then destroy directly: plan -destroy shows the
// objects and destroy removes them; a missing server variable is an error naming it.
func TestCentralRemovedDestroy(t *testing.T) {
	t.Parallel()
	g, cs, name := centralRetire(t, "central-rmd", false)
	g.WriteFile("slipway.yaml", strings.ReplaceAll(centralRetireGroup, "{{GROUP}}", g.Name))

	p := g.MustRun(0, "plan", "-destroy")
	for _, want := range []string{"static-role " + name, "database " + name, "login " + name, "kv secret/slipway/" + g.Name + "/k"} {
		if !strings.Contains(p.Stdout, want) {
			t.Errorf("plan -destroy without central: does not list %q:\n%s", want, p.Stdout)
		}
	}
	g.WithEnv("SLIPWAY_POSTGRESQL_URL=")
	if r := g.MustRun(1, "destroy", "--yes"); !strings.Contains(r.Stderr, "SLIPWAY_POSTGRESQL_URL is not set") {
		t.Errorf("destroy without the server's variable:\n%s", r)
	}
	g.WithEnv(cs.env()...)
	g.MustRun(0, "destroy", "--yes")
	if left := cs.left(t, g, name); len(left) > 0 {
		t.Errorf("after destroy without central: still there: %v", left)
	}
}
