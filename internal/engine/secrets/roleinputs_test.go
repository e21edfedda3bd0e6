package secrets

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
)

// roleInputsGroup: role plain takes the node's env (one reference to an existing Secret);
// role own has its own Secret and env, one reference to an existing ConfigMap.
const roleInputsGroup = `group: demo
nodes:
  web:
    image: {rootfs: .}
    env:
      DB: {secret: db, key: password}
    roles:
      plain: {}
      own:
        env:
          KEY: {secret: key, key: value}
          LEVEL: {config: settings, key: level}
        secrets:
          key: {fromEnv: {value: SLIPWAY_ENGINE_ROLE_TOKEN}}
`

func roleInputsPlan(t *testing.T) (*spec.Group, *plan.Plan) {
	return desiredPlan(t, roleInputsGroup)
}

// TestWithSecretDataOfRole: apply fills a role's own Secret web-own-key from the environment,
// and a changed value is refused naming the node and the role.
func TestWithSecretDataOfRole(t *testing.T) {
	t.Setenv("SLIPWAY_ENGINE_ROLE_TOKEN", "role-value")
	g, p := roleInputsPlan(t)
	filled, err := WithData(p, g)
	if err != nil {
		t.Fatal(err)
	}
	s := secretOf(filled)
	if s == nil || s.GetName() != "web-own-key" {
		t.Fatalf("no Secret web-own-key among the desired objects: %v", s)
	}
	want := map[string]any{"value": base64.StdEncoding.EncodeToString([]byte("role-value"))}
	if diff := cmp.Diff(want, s.Object["data"]); diff != "" {
		t.Errorf("filled data (-want +got):\n%s", diff)
	}
	t.Setenv("SLIPWAY_ENGINE_ROLE_TOKEN", "changed")
	_, err = WithData(p, g)
	if got, want := errString(err), "node web: role own: secret key: its values changed since the plan was made: plan again"; got != want {
		t.Errorf("changed value: error %q, want %q", got, want)
	}
}

// TestCheckReferencesOfRoles: a role's own reference to a missing object fails the plan
// naming the role; a role that takes the node's references does not repeat the node's error;
// the role's own Secret needs no check.
func TestCheckReferencesOfRoles(t *testing.T) {
	t.Setenv("SLIPWAY_ENGINE_ROLE_TOKEN", "x")
	g, _ := roleInputsPlan(t)
	file := g.File
	err := CheckReferences(g, "demo", map[plan.Key]plan.Object{})
	want := []string{
		"node web: env DB: Secret db does not exist in namespace demo (" + file + ":6)",
		"node web: role own: env LEVEL: ConfigMap settings does not exist in namespace demo (" + file + ":12)",
	}
	if diff := cmp.Diff(want, strings.Split(errString(err), "\n")); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}
