package e2e

import (
	"context"
	"strings"
	"testing"
)

// TestCentralKeepClaims: destroy --keep-claims keeps (like the nodes' claims) the deployment's databases, with their
// login roles and static roles (the login still works), and says so; an apply of the same file
// later takes them back as its own (nothing made again), and a plain destroy then removes them.
func TestCentralKeepClaims(t *testing.T) {
	t.Parallel()
	cs := realCentral(t)
	g := NewGroup(t, "central-keep", centralOneNode, "a")
	g.WithEnv(cs.env()...)
	admin := cs.admin(t, "postgres")
	name := g.Name + ".a"
	t.Cleanup(func() {
		_, _ = admin.Exec(context.Background(), `DROP DATABASE IF EXISTS "`+name+`" WITH (FORCE)`)
		_, _ = admin.Exec(context.Background(), `DROP ROLE IF EXISTS "`+name+`"`)
		_, _ = cs.srv.c.Logical().Delete("database/static-roles/" + name)
	})
	g.MustRun(0, "apply", "--yes")

	if d := g.MustRun(0, "destroy", "--yes", "--keep-claims"); !strings.Contains(d.Stdout+d.Stderr, "database "+name+" stays (--keep-claims)") {
		t.Errorf("destroy --keep-claims does not say the database stays:\n%s", d)
	}
	if !exists(t, admin, "database", name) || !exists(t, admin, "role", name) {
		t.Fatalf("destroy --keep-claims removed the database or its login %s", name)
	}
	creds, err := cs.srv.c.Logical().Read("database/static-creds/" + name)
	if err != nil || creds == nil {
		t.Fatalf("destroy --keep-claims removed the static role of %s: %v", name, err)
	}
	pw, _ := creds.Data["password"].(string)
	if err := cs.login(name, pw, name); err != nil {
		t.Errorf("the kept login does not log in to its kept database: %v", err)
	}

	// The kept objects carry the deployment's mark: a new apply takes them back.
	p := g.MustRun(2, "plan", "-detailed-exitcode")
	for _, made := range []string{"create   login " + name, "create   database " + name, "create   static-role " + name} {
		if strings.Contains(p.Stdout, made) {
			t.Errorf("the plan after destroy --keep-claims makes again what was kept (%s):\n%s", made, p.Stdout)
		}
	}
	g.MustRun(0, "apply", "--yes")
	g.MustRun(0, "destroy", "--yes")
	if exists(t, admin, "database", name) || exists(t, admin, "role", name) {
		t.Errorf("after a plain destroy: database or role %s still there", name)
	}
	g.scanForValues(map[string]string{"the kept login's password": pw, "the server's token": cs.srv.Token})
}
