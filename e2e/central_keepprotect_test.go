package e2e

import (
	"strings"
	"testing"
)

// TestCentralKeepClaimsKeepsProtect: a protected database dropped from a file that keeps
// `central:` and changes something else (a new KV entry), applied with --keep-claims: the
// database stays and so does its protect in the state, so the next plan without --keep-claims
// still refuses to drop it. Before, the apply rewrote the record from the file alone, the
// protect was lost, and that plan would have dropped the database with its data.
func TestCentralKeepClaimsKeepsProtect(t *testing.T) {
	t.Parallel()
	g, cs, name := centralRetire(t, "central-kp", true)
	t.Cleanup(func() { _, _ = cs.srv.c.Logical().Delete("secret/metadata/slipway/" + g.Name + "/k2") })

	dropped := strings.ReplaceAll(centralRetireGroup, "{{GROUP}}", g.Name) + `central:
  logins: {a: {}}
  kv: {k: {generate: {length: 16}}, k2: {generate: {length: 16}}}
`
	g.WriteFile("slipway.yaml", dropped)
	refused := name + " are no longer in the file but were last applied with protect"
	if r := g.MustRun(1, "plan"); !strings.Contains(r.Stderr, refused) {
		t.Fatalf("plan of the protected database dropped:\n%s", r)
	}
	a := g.MustRun(0, "apply", "--yes", "--keep-claims")
	if !strings.Contains(a.Stdout+a.Stderr, "database "+name+" is no longer in the file and stays (--keep-claims)") {
		t.Errorf("apply --keep-claims does not say the database stays:\n%s", a)
	}
	if s, err := cs.srv.c.Logical().Read("secret/metadata/slipway/" + g.Name + "/k2"); err != nil || s == nil {
		t.Errorf("apply --keep-claims did not make the new entry k2: %v", err)
	}
	if left := cs.left(t, g, name); !strings.Contains(strings.Join(left, ","), "database") {
		t.Fatalf("apply --keep-claims removed the database %s: left %v", name, left)
	}
	if r := g.MustRun(1, "plan"); !strings.Contains(r.Stderr, refused) {
		t.Errorf("plan without --keep-claims after it: the protect of %s is lost:\n%s", name, r)
	}

	g.centralSection(false) // lift protect, then the deployment goes
	if r := g.MustRun(2, "plan", "-detailed-exitcode"); !strings.Contains(r.Stdout, "database "+name+": protect lifted") {
		t.Errorf("plan of protect unset:\n%s", r)
	}
	g.MustRun(0, "apply", "--yes")
	g.MustRun(0, "destroy", "--yes")
	if left := cs.left(t, g, name); len(left) > 0 {
		t.Errorf("after destroy: still there: %v", left)
	}
}
