package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

// TestSecretHashNeedsTheKey (issue 35 item 5): a 6-digit secret applied from a plan saved
// before the group had a state. What a reader of Deployments (the built-in view role), of the
// saved plan or of render output sees of it is keyed with the group's secret key: a guess of
// the right value, hashed as the code hashes it, matches nothing. The key is in the state
// only (`state show` leaves it out); the saved plan is readable by its owner only; the next
// plan says `No changes.`.
func TestSecretHashNeedsTheKey(t *testing.T) {
	t.Parallel()
	const value = "271828"
	g := NewGroup(t, "seckey", configGroup, "web")
	g.WriteFile("conf/app.conf", "listen 8080\n")
	g.WithEnv("SLIPWAY_E2E_APP_TOKEN=" + value)
	planFile := filepath.Join(g.Dir, "plan.json")
	g.MustRun(0, "plan", "-out", planFile)
	if fi, err := os.Stat(planFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("saved plan: %v, mode %v; want -rw-------", err, fi.Mode().Perm())
	}
	g.MustRun(0, "apply", planFile)
	if r := g.MustRun(0, "plan"); !strings.Contains(r.Stdout, "No changes.") {
		t.Errorf("plan after applying the saved plan: want No changes., got %s", r)
	}

	ctx := context.Background()
	s, err := g.Kube.Clientset.CoreV1().Secrets(g.Name).Get(ctx, "web-app", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	annotation := s.Annotations[spec.AnnotationSecretHash]
	guess := spec.SecretHash("web-app", map[string]string{"token": value})
	saved, err := os.ReadFile(planFile)
	if err != nil {
		t.Fatal(err)
	}
	rendered := g.MustRun(0, "render").Stdout
	shown := map[string]string{"Secret annotation": annotation, "Deployment config hash": configHash(t, g),
		"saved plan": string(saved), "render output": rendered}
	for where, text := range shown {
		if text == "" || strings.Contains(text, strings.TrimPrefix(guess, "sha256:")) {
			t.Errorf("the %s holds the unkeyed hash of the value (or nothing): %.200q", where, text)
		}
	}
	if !strings.HasPrefix(annotation, "hmac-sha256:") || !strings.Contains(rendered, annotation) {
		t.Errorf("Secret annotation %q: want a keyed hash, the one render prints", annotation)
	}

	st := g.State()
	raw, _ := json.Marshal(st.State)
	if strings.Contains(string(raw), `"secretKey":"`) && !strings.Contains(string(raw), `"secretKey":"(set, not shown)"`) {
		t.Errorf("state show -o json prints the secret key: %s", raw)
	}
	if loc := st.Location; strings.HasPrefix(loc, "/") {
		b, err := os.ReadFile(loc)
		if err != nil {
			t.Fatal(err)
		}
		var doc state.Document
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		key, err := base64.StdEncoding.DecodeString(doc.SecretKey)
		if err != nil || spec.KeyedHash(key, guess) != annotation {
			t.Errorf("the annotation is not the keyed hash under the state's key (%v)", err)
		}
	}
}
