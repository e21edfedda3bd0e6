package render_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"slipway.dev/slipway/internal/render"
	"slipway.dev/slipway/internal/spec"
)

// TestSecretHashKeyed (issue 35 item 5): what render writes of a secret's value, the Secret's
// annotation and the config hash of the pods that read it, cannot be checked against a guess
// without the group's secret key: a guess of the right value, hashed as slipway hashes it,
// matches neither; another key gives other hashes; and a group with secrets does not render
// without a key.
func TestSecretHashKeyed(t *testing.T) {
	const value = "123456" // a 6-digit value: a million guesses
	t.Setenv("SLIPWAY_RENDER_TOKEN", value)
	g, err := spec.Load("testdata/workload/role-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	shown := func(key []byte) (annotation, configHash string) {
		in := fakeInput(g)
		in.SecretKey = key
		objs, err := render.Objects(in)
		if err != nil {
			t.Fatal(err)
		}
		s, ok := find[*corev1.Secret](objs, "Secret", "web-app")
		if !ok {
			t.Fatal("no Secret web-app")
		}
		d, ok := find[*appsv1.Deployment](objs, "Deployment", "web")
		if !ok {
			t.Fatal("no Deployment web")
		}
		return s.Annotations[spec.AnnotationSecretHash], d.Spec.Template.Annotations[spec.AnnotationConfigHash]
	}
	annotation, configHash := shown(testSecretKey)
	// What an offline guesser computes for the right guess, from the hashing code alone.
	guess := spec.SecretHash("web-app", map[string]string{"token": value})
	conf, _ := g.Node("web").OwnConfig("app")
	h := sha256.New()
	fmt.Fprintf(h, "config/app=%s\nsecret/app=%s\n", spec.ConfigHash(conf.Data), guess)
	guessConfig := "sha256:" + hex.EncodeToString(h.Sum(nil))
	if annotation == "" || annotation == guess {
		t.Errorf("the Secret's annotation %q is the unkeyed hash of its value", annotation)
	}
	if configHash == "" || configHash == guessConfig {
		t.Errorf("the pod's config hash %q is the unkeyed hash of the value", configHash)
	}
	if want := spec.KeyedHash(testSecretKey, guess); annotation != want {
		t.Errorf("the Secret's annotation %q, want the keyed hash %q", annotation, want)
	}
	other, otherConfig := shown([]byte("another-key-of-thirty-two-bytes!"))
	if other == annotation || otherConfig == configHash {
		t.Errorf("another key gives the same hashes: %q, %q", other, otherConfig)
	}
	in := fakeInput(g)
	in.SecretKey = nil
	if _, err := render.Objects(in); err == nil {
		t.Error("a group with secrets rendered without a secret key")
	}
}
