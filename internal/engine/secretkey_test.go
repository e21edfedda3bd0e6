package engine

import (
	"bytes"
	"context"
	"encoding/base64"
	"testing"

	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

// TestSecretKey (issue 35 item 5): a plan hashes with the state's key, else with a new random
// one; RecordSecretKey makes the key once, in the state, for a group with secrets only, and
// later calls return the same key.
func TestSecretKey(t *testing.T) {
	ctx := context.Background()
	stored := bytes.Repeat([]byte{7}, spec.SecretKeyBytes)
	doc := &state.Document{Group: "demo", SecretKey: base64.StdEncoding.EncodeToString(stored)}
	if key, err := planSecretKey(doc); err != nil || !bytes.Equal(key, stored) {
		t.Errorf("plan key with one in the state: %x, %v; want the state's", key, err)
	}
	a, errA := planSecretKey(nil)
	b, errB := planSecretKey(&state.Document{Group: "demo"})
	if errA != nil || errB != nil || len(a) != spec.SecretKeyBytes || bytes.Equal(a, b) {
		t.Errorf("plan keys without one in the state: %x, %x (%v, %v): want two random ones", a, b, errA, errB)
	}
	if _, err := planSecretKey(&state.Document{Group: "demo", SecretKey: "bm90IDMyIGJ5dGVz"}); err == nil {
		t.Error("a state key of the wrong length was taken")
	}

	g := &spec.Group{Name: "demo", Nodes: []*spec.Node{{Name: "web"}}}
	store := &memStore{}
	if key, err := New(Options{}).RecordSecretKey(ctx, Target{Group: g, Store: store}); err != nil || key != nil || store.Writes != 0 {
		t.Errorf("a group without secrets: key %x, %v, %d writes; want none", key, err, store.Writes)
	}
	g.Nodes[0].Secrets = []spec.SecretSource{{Name: "app", Object: "web-app"}}
	first, err := New(Options{}).RecordSecretKey(ctx, Target{Group: g, Store: store})
	if err != nil || len(first) != spec.SecretKeyBytes || store.Writes != 1 {
		t.Fatalf("first record: key %x, %v, %d writes; want a key written once", first, err, store.Writes)
	}
	again, err := New(Options{}).RecordSecretKey(ctx, Target{Group: g, Store: store})
	if err != nil || !bytes.Equal(first, again) || store.Writes != 1 {
		t.Errorf("second record: key %x, %v, %d writes; want the same key, nothing written", again, err, store.Writes)
	}
}
