package engine

import (
	"bytes"
	"context"
	"testing"

	"slipway.dev/slipway/internal/spec"
)

// TestRecordSecretKey (issue 35 item 5): RecordSecretKey makes the key once, in the state, for
// a group with secrets only, and later calls return the same key (secrets.TestSecretKey: the
// key a plan hashes with).
func TestRecordSecretKey(t *testing.T) {
	ctx := context.Background()
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
