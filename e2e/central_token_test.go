package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	bao "github.com/openbao/openbao/api/v2"
)

// centralPolicy is docs/central.md's policy for the lane's token, for identity id.
func centralPolicy(id string) string {
	return strings.NewReplacer("<id>", id).Replace(`path "database/static-roles/<id>.*"    { capabilities = ["create", "read", "update", "delete"] }
path "secret/data/slipway/<id>/*"      { capabilities = ["create", "read", "update"] }
path "secret/metadata/slipway/<id>/*"  { capabilities = ["create", "read", "update", "delete", "list"] }
path "secret/metadata/slipway/<id>"    { capabilities = ["list"] }
`)
}

// TestCentralNarrowToken: the lane works with a token holding only docs/central.md's policy
// for the deployment (no root token): apply, a second plan with no changes, destroy. The same
// token cannot plan another deployment of the file, whose names its policy does not cover.
func TestCentralNarrowToken(t *testing.T) {
	t.Parallel()
	cs := realCentral(t)
	g := NewGroup(t, "central-token", centralOneNode, "a")
	id := g.Name
	if err := cs.srv.c.Sys().PutPolicy(id+"-lane", centralPolicy(id)); err != nil {
		t.Fatal(err)
	}
	tok, err := cs.srv.c.Auth().Token().Create(&bao.TokenCreateRequest{Policies: []string{id + "-lane"}, TTL: "15m", NoDefaultPolicy: true})
	if err != nil || tok.Auth == nil {
		t.Fatalf("token: %v", err)
	}
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte(tok.Auth.ClientToken), 0o600); err != nil {
		t.Fatal(err)
	}
	g.WithEnv(cs.env()...).WithEnv("SLIPWAY_OPENBAO_TOKEN_FILE=" + file)
	admin := cs.admin(t, "postgres")

	g.MustRun(0, "apply", "--yes")
	if !exists(t, admin, "database", id+".a") {
		t.Errorf("apply with the narrow token: database %s.a missing", id)
	}
	if r := g.MustRun(0, "plan", "-detailed-exitcode"); !strings.Contains(r.Stdout, "No changes.") {
		t.Errorf("second plan with the narrow token:\n%s", r.Stdout)
	}
	if r := g.Run("plan", "--deployment-id", "other"); r.Code == 0 || !strings.Contains(r.Stderr, "permission denied") {
		t.Errorf("the narrow token planned another deployment:\n%s", r)
	}
	g.MustRun(0, "destroy", "--yes")
	if exists(t, admin, "database", id+".a") || exists(t, admin, "role", id+".a") {
		t.Errorf("destroy with the narrow token left %s.a", id)
	}
	if kv, _ := cs.srv.c.Logical().Read("secret/metadata/slipway/" + id + "/k"); kv != nil {
		t.Error("destroy with the narrow token left the KV entry")
	}
	g.scanForValues(map[string]string{"the lane's token": tok.Auth.ClientToken, "the server's token": cs.srv.Token})
}
