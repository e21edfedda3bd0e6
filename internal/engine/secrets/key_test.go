package secrets

import (
	"bytes"
	"encoding/base64"
	"testing"

	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

// TestSecretKey (issue 35 item 5): a plan hashes with the state's key, else with a new random
// one (the engine's TestRecordSecretKey: the key is made once, in the state).
func TestSecretKey(t *testing.T) {
	stored := bytes.Repeat([]byte{7}, spec.SecretKeyBytes)
	doc := &state.Document{Group: "demo", SecretKey: base64.StdEncoding.EncodeToString(stored)}
	if key, err := PlanKey(doc); err != nil || !bytes.Equal(key, stored) {
		t.Errorf("plan key with one in the state: %x, %v; want the state's", key, err)
	}
	a, errA := PlanKey(nil)
	b, errB := PlanKey(&state.Document{Group: "demo"})
	if errA != nil || errB != nil || len(a) != spec.SecretKeyBytes || bytes.Equal(a, b) {
		t.Errorf("plan keys without one in the state: %x, %x (%v, %v): want two random ones", a, b, errA, errB)
	}
	if _, err := PlanKey(&state.Document{Group: "demo", SecretKey: "bm90IDMyIGJ5dGVz"}); err == nil {
		t.Error("a state key of the wrong length was taken")
	}
}
