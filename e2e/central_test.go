package e2e

// Issue 44 against the dev environment's PostgreSQL and secrets server (dev up --secrets
// --central), on the real node: the central lane makes each node's database and login, OpenBao
// holds and rotates the password, and each node's service reads its credentials through the
// secrets sidecar and logs in with them.

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"slipway.dev/slipway/internal/devcluster/devtest"
)

// centralServers are the dev environment's PostgreSQL (the admin URL without a password, the
// passfile holding it) and secrets server, as `slipway dev env` exports them.
type centralServers struct {
	vars map[string]string
	srv  *secretsServer
}

// realCentral returns the dev environment's central servers; it fails the test when the
// environment has none (never a skip).
func realCentral(t *testing.T) *centralServers {
	t.Helper()
	srv := realSecretsServer(t)
	vars := devEnvExports(t, devtest.Env(t).Dir)
	if vars["SLIPWAY_POSTGRESQL_URL"] == "" {
		t.Fatal("the dev environment has no PostgreSQL: `slipway dev env` exports no SLIPWAY_POSTGRESQL_URL (start it with `slipway dev up --secrets --central`)")
	}
	return &centralServers{vars: vars, srv: srv}
}

// env is what a run of slipway needs for the lane: the variables of `dev env`.
func (c *centralServers) env() []string {
	var out []string
	for _, k := range []string{"SLIPWAY_POSTGRESQL_URL", "PGPASSFILE", "SLIPWAY_OPENBAO_ADDR", "SLIPWAY_OPENBAO_CA_FILE", "SLIPWAY_OPENBAO_TOKEN_FILE"} {
		out = append(out, k+"="+c.vars[k])
	}
	return out
}

// admin connects to database db as the admin.
func (c *centralServers) admin(t *testing.T, db string) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(c.vars["SLIPWAY_POSTGRESQL_URL"])
	if err != nil {
		t.Fatal(err)
	}
	cfg.Database, cfg.Password = db, c.adminPassword(t)
	conn, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// adminPassword is the admin's password from the passfile's one line,
// *:<port>:*:<admin>:<password> (a parallel test cannot set PGPASSFILE in its own environment).
func (c *centralServers) adminPassword(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(c.vars["PGPASSFILE"])
	if err != nil {
		t.Fatal(err)
	}
	f := strings.SplitN(strings.TrimSpace(string(b)), ":", 5)
	if len(f) != 5 {
		t.Fatalf("passfile %s: not one host:port:db:user:password line", c.vars["PGPASSFILE"])
	}
	return f[4]
}

// login tries user's login to database db with password, as a pod does; nil when it works.
func (c *centralServers) login(user, password, db string) error {
	u, err := url.Parse(c.vars["SLIPWAY_POSTGRESQL_URL"])
	if err != nil {
		return err
	}
	u.User, u.Path = url.UserPassword(user, password), "/"+db
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cfg, err := pgx.ParseConfig(u.String())
	if err != nil {
		return err
	}
	cfg.Password = password // a passfile never stands in for it
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var who string
	if err := conn.QueryRow(ctx, "SELECT current_user").Scan(&who); err != nil {
		return err
	}
	if who != user {
		return fmt.Errorf("logged in as %s, not %s", who, user)
	}
	return nil
}

// exists reports whether the catalog has a database or role of that name.
func exists(t *testing.T, conn *pgx.Conn, what, name string) bool {
	t.Helper()
	q := map[string]string{"database": "SELECT count(*) FROM pg_database WHERE datname = $1", "role": "SELECT count(*) FROM pg_roles WHERE rolname = $1"}[what]
	var n int
	if err := conn.QueryRow(context.Background(), q, name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}

// centralGroup has two service nodes, each with a database, a login and the sidecar files of
// its credentials, and a generated KV entry. {{ADDR}}, {{CA}} are the secrets server's.
const centralGroup = `group: {{GROUP}}
defaults:
  init: none
  rolloutTimeout: 2m
  {{REAL}}
nodes:
  a:
    image: {rootfs: nodes/a/rootfs, command: [/bin/sleep, "1000000"]}
    secretsFrom:
      openbao: {address: "{{ADDR}}", {{CA}}role: {{GROUP}}-a, pollInterval: 1s}
    roles:
      svc:
        service: {image: {archive: build/svc.tar, command: [/usr/sbin/httpd, -f, -p, "8080", -h, /tmp]}}
        probes: {startup: {tcp: 8080}}
        sidecarSecrets:
          user: {login: a, key: username}
          password: {login: a, key: password, restart: true}
          token: {entry: token}
  b:
    image: {rootfs: nodes/b/rootfs, command: [/bin/sleep, "1000000"]}
    secretsFrom:
      openbao: {address: "{{ADDR}}", {{CA}}role: {{GROUP}}-b, pollInterval: 1s}
    roles:
      svc:
        service: {image: {archive: build/svc.tar, command: [/usr/sbin/httpd, -f, -p, "8080", -h, /tmp]}}
        probes: {startup: {tcp: 8080}}
        sidecarSecrets:
          pg.conf: {login: b, template: "user={{ .username }} password={{ .password }}"}
central:
  logins:
    a: {connectionLimit: 5, rotationPeriod: 1h}
    b: {}
  databases:
    a: {owner: a{{PROTECT}}}
    b: {owner: b, extensions: [pgcrypto]}
  kv:
    token: {generate: {length: 24}}
`

// TestRealCentral is issue 44's path on the real node: plan shows the objects, apply makes
// them before the nodes, each node's service reads its credentials through the sidecar and
// they log in; a second plan says No changes; OpenBao rotates a password and the file follows
// (the new one logs in, the old one not); a protected database refuses destroy; destroy drops
// everything; no credential in any output, state, plan file, event or object.
func TestRealCentral(t *testing.T) {
	t.Parallel()
	cs := realCentral(t)
	srv := cs.srv
	tmpl := strings.NewReplacer("{{ADDR}}", srv.Addr, "{{PROTECT}}", "").Replace(centralGroup)
	g, node := NewRealGroup(t, "real-central", tmpl, "a", "b")
	tmpl = strings.ReplaceAll(tmpl, "{{CA}}", g.writeCA(srv))
	g.realWriteGroup(tmpl)
	g.WithEnv(cs.env()...)
	g.writeServiceArchive("svc.tar", `sleep 1000000`)
	id := g.Name // the deployment's identity: the group alone
	nameA, nameB := id+".a", id+".b"
	// What an operator writes: each node may read its own login's credentials and the entry.
	for _, n := range []string{"a", "b"} {
		role := g.Name + "-" + n
		if err := srv.c.Sys().PutPolicy(role, fmt.Sprintf("path %q { capabilities = [\"read\"] }\npath %q { capabilities = [\"read\"] }\n",
			"database/static-creds/"+id+"."+n, "secret/data/slipway/"+id+"/token")); err != nil {
			t.Fatal(err)
		}
		srv.role(t, role, "node-"+n, g.Name, "openbao", role)
	}
	run := g.MustRun // every run's output is kept for scanForValues

	plan := run(2, "plan", "-detailed-exitcode")
	for _, want := range []string{"central services:", "login " + nameA, "static-role " + nameB, "database " + nameA, "extension " + nameB + "/pgcrypto", "kv secret/slipway/" + id + "/token"} {
		if !strings.Contains(plan.Stdout, want) {
			t.Errorf("plan does not show %q:\n%s", want, plan.Stdout)
		}
	}
	start := time.Now()
	run(0, "apply", "--yes")
	t.Logf("bench: first apply with the central lane and two service nodes: %s", time.Since(start).Round(time.Millisecond))
	admin := cs.admin(t, "postgres")
	for _, n := range []string{nameA, nameB} {
		if !exists(t, admin, "database", n) || !exists(t, admin, "role", n) {
			t.Errorf("after apply: database or role %s missing", n)
		}
	}

	// Each service's credentials, read from its files, log in to its database, not the other's.
	podA, podB := g.realPod("a-svc", node), g.realPod("b-svc", node)
	user := g.serviceFile(podA.Name, "user")
	pwA := g.serviceFile(podA.Name, "password")
	conf := g.serviceFile(podB.Name, "pg.conf")
	token := g.serviceFile(podA.Name, "token")
	pwB := strings.TrimPrefix(conf, "user="+nameB+" password=")
	if user != nameA || pwA == "" || pwB == conf || len(token) != 24 {
		t.Fatalf("files: user %q, password %d bytes, pg.conf %d bytes (user %s?), token %d bytes", user, len(pwA), len(conf), nameB, len(token))
	}
	if err := cs.login(nameA, pwA, nameA); err != nil {
		t.Errorf("a's credentials do not log in to its database: %v", err)
	}
	if err := cs.login(nameB, pwB, nameB); err != nil {
		t.Errorf("b's credentials do not log in to its database: %v", err)
	}
	if err := cs.login(nameA, pwA, nameB); err == nil {
		t.Error("a's credentials log in to b's database: CONNECT was not revoked from PUBLIC")
	}

	// A second plan says No changes, and it and a no-op apply write nothing: no catalog row
	// of the lane's objects gets a new version, no static role is rotated, no entry written.
	before := cs.writeMarks(t, admin, id, []string{nameA, nameB}, "token")
	if r := run(0, "plan", "-detailed-exitcode"); !strings.Contains(r.Stdout, "No changes.") {
		t.Errorf("second plan:\n%s", r.Stdout)
	}
	if r := run(0, "apply", "--yes"); !strings.Contains(r.Stdout+r.Stderr, "No changes.") {
		t.Errorf("no-op apply:\n%s", r.Stdout)
	}
	if diff := cmp.Diff(before, cs.writeMarks(t, admin, id, []string{nameA, nameB}, "token")); diff != "" {
		t.Errorf("the second plan and the no-op apply wrote to the central services (-before +after):\n%s", diff)
	}

	// OpenBao rotates a's password: the file follows, the service restarts (restart: true),
	// the new password logs in, the old one not. The service container is stopped by the
	// restart, and an exec into it then fails: only a successful read counts (the first run
	// of this test took kubectl's error message for the new password).
	restarts := containerStatus(&podA, "service").RestartCount
	rotated := time.Now()
	srv.write(t, "database/rotate-role/"+nameA, nil)
	var pwA2 string
	devtest.WaitFor(t, time.Minute, "the password file rewritten after the rotation", func() (bool, string) {
		p := g.realPod("a-svc", node)
		out, ok := g.execIn(p.Name, "service", "cat", "/run/secrets/password")
		if !ok {
			return false, "exec into the service container failed (restarting?)"
		}
		pwA2 = out
		return pwA2 != "" && pwA2 != pwA, fmt.Sprintf("%d bytes", len(pwA2))
	})
	t.Logf("bench: rotate-role → the new password read in the restarted service container: %s", time.Since(rotated).Round(100*time.Millisecond))
	if creds, err := srv.c.Logical().Read("database/static-creds/" + nameA); err != nil || creds == nil || creds.Data["password"] != pwA2 {
		t.Errorf("the file does not hold the password OpenBao gives after the rotation (read error %v)", err)
	}
	devtest.WaitFor(t, time.Minute, "the service restarted for its new password", func() (bool, string) {
		p := g.realPod("a-svc", node)
		n := containerStatus(&p, "service").RestartCount
		return n > restarts, fmt.Sprintf("restarts %d, before %d", n, restarts)
	})
	if err := cs.login(nameA, pwA2, nameA); err != nil {
		t.Errorf("the rotated password does not log in: %v", err)
	}
	if err := cs.login(nameA, pwA, nameA); err == nil {
		t.Error("the password before the rotation still logs in")
	}

	// Protected: destroy refuses and removes nothing.
	g.realWriteGroup(strings.NewReplacer("{{ADDR}}", srv.Addr, "{{PROTECT}}", ", protect: true", "{{CA}}", g.writeCA(srv)).Replace(centralGroup))
	if r := g.Run("destroy", "--yes"); r.Code == 0 || !strings.Contains(r.Stderr, "protected") {
		t.Errorf("destroy of a protected database:\n%s", r)
	}
	if !exists(t, admin, "database", nameA) || !g.NamespaceExists() {
		t.Error("a refused destroy removed something")
	}
	g.realWriteGroup(strings.NewReplacer("{{ADDR}}", srv.Addr, "{{PROTECT}}", "", "{{CA}}", g.writeCA(srv)).Replace(centralGroup))
	pd := run(0, "plan", "-destroy")
	for _, want := range []string{"database " + nameA, "login " + nameB, "static-role " + nameA, "kv secret/slipway/" + id + "/token"} {
		if !strings.Contains(pd.Stdout, want) {
			t.Errorf("plan -destroy does not show %q:\n%s", want, pd.Stdout)
		}
	}

	// No credential anywhere slipway writes or prints, nor in the cluster: outputs, state,
	// a saved plan, events, objects, container logs.
	run(0, "plan", "-out", "saved.plan")
	g.scanForValues(map[string]string{"a's password": pwA, "a's rotated password": pwA2, "b's password": pwB,
		"the generated entry": token, "the server's token": srv.Token, "the PostgreSQL admin's password": cs.adminPassword(t)})
	run(0, "destroy", "--yes")
	for _, n := range []string{nameA, nameB} {
		if exists(t, admin, "database", n) || exists(t, admin, "role", n) {
			t.Errorf("after destroy: database or role %s still there", n)
		}
	}
	if r, _ := srv.c.Logical().Read("database/static-roles/" + nameA); r != nil {
		t.Error("after destroy: the static role is still there")
	}
	if err := cs.login(nameA, pwA2, "postgres"); err == nil {
		t.Error("after destroy: a's login still works")
	}
}

// TestCentralForeignDatabase: a database of the deployment's name that someone else made
// stops the plan, naming it, and nothing is made.
func TestCentralForeignDatabase(t *testing.T) {
	t.Parallel()
	cs := realCentral(t)
	g := NewGroup(t, "central-foreign", `group: {{GROUP}}
nodes:
  a:
    image: {rootfs: nodes/a/rootfs}
central:
  logins: {a: {}}
  databases: {a: {owner: a}}
`, "a")
	g.WithEnv(cs.env()...)
	admin := cs.admin(t, "postgres")
	name := g.Name + ".a"
	if _, err := admin.Exec(context.Background(), `CREATE DATABASE "`+name+`"`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = admin.Exec(context.Background(), `DROP DATABASE IF EXISTS "`+name+`"`) })
	r := g.Run("plan")
	if r.Code == 0 || !strings.Contains(r.Stderr, "database "+name+" exists and is not this deployment's") {
		t.Errorf("plan with a foreign database of the name:\n%s", r)
	}
	if exists(t, admin, "role", name) {
		t.Error("the refused plan made the login")
	}
	// A missing server variable is an error naming it.
	g.WithEnv("SLIPWAY_POSTGRESQL_URL=")
	if r := g.Run("plan"); r.Code == 0 || !strings.Contains(r.Stderr, "SLIPWAY_POSTGRESQL_URL is not set") {
		t.Errorf("plan without SLIPWAY_POSTGRESQL_URL:\n%s", r)
	}
}

// centralOneNode is a group of one node a with a database, its login and a generated KV entry.
const centralOneNode = `group: {{GROUP}}
nodes:
  a:
    image: {rootfs: nodes/a/rootfs}
central:
  logins: {a: {}}
  databases: {a: {owner: a}}
  kv: {k: {generate: {length: 16}}}
`

// TestCentralTwoDeployments: two deployments of one file (deployment ids x1 and x2) get their
// own databases, logins and entries, named after their identities; destroying one leaves the
// other's intact, and its second plan still says No changes.
func TestCentralTwoDeployments(t *testing.T) {
	t.Parallel()
	cs := realCentral(t)
	g := NewGroup(t, "central-two", centralOneNode, "a")
	g.WithEnv(cs.env()...)
	admin := cs.admin(t, "postgres")
	for _, id := range []string{"x1", "x2"} {
		g.MustRun(0, "apply", "--yes", "--deployment-id", id)
	}
	one, two := g.Name+".all.x1.a", g.Name+".all.x2.a"
	for _, n := range []string{one, two} {
		if !exists(t, admin, "database", n) || !exists(t, admin, "role", n) {
			t.Errorf("database or role %s missing after both applies", n)
		}
	}
	g.MustRun(0, "destroy", "--yes", "--deployment-id", "x1")
	if exists(t, admin, "database", one) || exists(t, admin, "role", one) {
		t.Errorf("x1's database or role %s stayed after its destroy", one)
	}
	if !exists(t, admin, "database", two) || !exists(t, admin, "role", two) {
		t.Errorf("destroying x1 removed x2's %s", two)
	}
	for id, want := range map[string]bool{"x1": false, "x2": true} {
		sr, _ := cs.srv.c.Logical().Read("database/static-roles/" + g.Name + ".all." + id + ".a")
		kv, _ := cs.srv.c.Logical().Read("secret/metadata/slipway/" + g.Name + ".all." + id + "/k")
		if (sr != nil) != want || (kv != nil) != want {
			t.Errorf("after x1's destroy: %s's static role there %v, KV entry there %v; want %v", id, sr != nil, kv != nil, want)
		}
	}
	if r := g.MustRun(0, "plan", "--deployment-id", "x2"); !strings.Contains(r.Stdout, "No changes.") {
		t.Errorf("x2's plan after x1's destroy:\n%s", r.Stdout)
	}
	g.MustRun(0, "destroy", "--yes", "--deployment-id", "x2")
	if exists(t, admin, "database", two) {
		t.Errorf("x2's database stayed after its destroy")
	}
}
