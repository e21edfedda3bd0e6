package engine

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"

	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

// The group's secret key (issue 35 item 5): the hashes of the Secrets' values that Secrets,
// pod templates, plans and rendered files carry are keyed with it (spec.KeyedHash), so that
// none of their readers can test a guess of a value. It lives in the state, which readers of
// Deployments, plans and the group's Git do not have; `state show` leaves it out.

// secretKeyOf is the key the state holds; nil when it holds none.
func secretKeyOf(doc *state.Document) ([]byte, error) {
	if doc == nil || doc.SecretKey == "" {
		return nil, nil
	}
	key, err := base64.StdEncoding.DecodeString(doc.SecretKey)
	if err != nil || len(key) != spec.SecretKeyBytes {
		return nil, fmt.Errorf("state of group %s: secretKey is not %d bytes in base64: restore it from a backup of the state, or remove it (every pod that uses a secret is then rolled out once)", doc.Group, spec.SecretKeyBytes)
	}
	return key, nil
}

// planSecretKey is the key a plan hashes with: the state's, else a new one that the apply of
// this plan records.
func planSecretKey(doc *state.Document) ([]byte, error) {
	key, err := secretKeyOf(doc)
	if key != nil || err != nil {
		return key, err
	}
	key = make([]byte, spec.SecretKeyBytes)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("secret key: %w", err)
	}
	return key, nil
}

// recordSecretKey writes key into the state when it holds none, before anything hashed with
// it reaches the cluster.
func (r *recorder) recordSecretKey(ctx context.Context, key []byte) error {
	r.mu.Lock()
	has := r.doc.SecretKey != ""
	r.mu.Unlock()
	if has || key == nil {
		return nil
	}
	return r.Update(ctx, "of the group's secret key", func(d *state.Document) {
		d.SecretKey = base64.StdEncoding.EncodeToString(key)
	})
}

// RecordSecretKey returns the group's secret key, made and written into the state when it
// holds none: what a saved plan and render hash with must be there for the apply that
// follows. The caller holds the lock. A group without secrets: needs none: nil.
func (e *Engine) RecordSecretKey(ctx context.Context, t Target) ([]byte, error) {
	if !t.Group.HasOwnSecrets() {
		return nil, nil
	}
	doc, err := readAnyNamespace(ctx, t)
	if err != nil {
		return nil, err
	}
	if key, err := secretKeyOf(doc); key != nil || err != nil {
		return key, err
	}
	if doc == nil {
		doc = &state.Document{Group: t.Group.Name}
	}
	key, err := planSecretKey(nil)
	if err != nil {
		return nil, err
	}
	if err := newRecorder(t.Store, doc).recordSecretKey(ctx, key); err != nil {
		return nil, err
	}
	return key, nil
}

// SecretKeyRecorded reports whether the state holds the group's secret key, or the group
// needs none.
func SecretKeyRecorded(g *spec.Group, doc *state.Document) bool {
	return !g.HasOwnSecrets() || doc != nil && doc.SecretKey != ""
}
