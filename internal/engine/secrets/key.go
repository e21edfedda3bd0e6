package secrets

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"

	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

// The group's secret key (issue 35 item 5): the hashes of the Secrets' values that Secrets,
// pod templates, plans and rendered files carry are keyed with it (spec.KeyedHash), so that
// none of their readers can test a guess of a value. It lives in the state, which readers of
// Deployments, plans and the group's Git do not have; `state show` leaves it out.

// KeyOf is the key the state holds; nil when it holds none.
func KeyOf(doc *state.Document) ([]byte, error) {
	if doc == nil || doc.SecretKey == "" {
		return nil, nil
	}
	key, err := base64.StdEncoding.DecodeString(doc.SecretKey)
	if err != nil || len(key) != spec.SecretKeyBytes {
		return nil, fmt.Errorf("state of group %s: secretKey is not %d bytes in base64: restore it from a backup of the state, or remove it (every pod that uses a secret is then rolled out once)", doc.Group, spec.SecretKeyBytes)
	}
	return key, nil
}

// PlanKey is the key a plan hashes with: the state's, else a new one that the apply of
// this plan records.
func PlanKey(doc *state.Document) ([]byte, error) {
	key, err := KeyOf(doc)
	if key != nil || err != nil {
		return key, err
	}
	key = make([]byte, spec.SecretKeyBytes)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("secret key: %w", err)
	}
	return key, nil
}

// RecordKey writes key into the state when it holds none, before anything hashed with it
// reaches the cluster.
func RecordKey(ctx context.Context, rec lane.Recorder, key []byte) error {
	var has bool
	rec.View(func(d *state.Document) { has = d.SecretKey != "" })
	if has || key == nil {
		return nil
	}
	return rec.Update(ctx, "of the group's secret key", func(d *state.Document) {
		d.SecretKey = base64.StdEncoding.EncodeToString(key)
	})
}

// KeyRecorded reports whether the state holds the group's secret key, or the group needs
// none.
func KeyRecorded(g *spec.Group, doc *state.Document) bool {
	return !g.HasOwnSecrets() || doc != nil && doc.SecretKey != ""
}
