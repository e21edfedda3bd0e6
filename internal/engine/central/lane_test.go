package central

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
)

func testCentral() *spec.Central {
	return &spec.Central{DatabaseMount: "database", Connection: "postgresql", KVMount: "secret",
		Logins:    []spec.CentralLogin{{Key: "orders", ConnectionLimit: 5, Rotation: time.Hour}},
		Databases: []spec.CentralDatabase{{Key: "orders", Owner: "orders", Extensions: []string{"pgcrypto"}}},
		KV: []spec.CentralKV{{Key: "api-key", Length: 16, Alphabet: "ab"},
			{Key: "smtp", Env: "SMTP_PASSWORD"}},
	}
}

func testLane(c *spec.Central, identity string, pg *fakePG, b *fakeBao) *Lane {
	return &Lane{Central: c, Identity: identity, PG: pg, Bao: b,
		Value:  func(k spec.CentralKV) (string, error) { return "from-" + k.Env, nil },
		Random: Random}
}

func summary(cs []plan.CentralChange) []string {
	var out []string
	for _, c := range cs {
		out = append(out, string(c.Action)+" "+string(c.What)+" "+c.Name)
	}
	return out
}

// TestPlanApplyNoChanges: a first plan makes every object, apply makes them with the marks,
// a second plan has nothing to do and the generated value stays what it was.
func TestPlanApplyNoChanges(t *testing.T) {
	ctx := context.Background()
	pg, b := newFakePG(), newFakeBao()
	l := testLane(testCentral(), "shop.front.x7", pg, b)
	p, err := l.Plan(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"create login shop.front.x7.orders", "create static-role shop.front.x7.orders",
		"create database shop.front.x7.orders", "create extension shop.front.x7.orders/pgcrypto",
		"create kv secret/slipway/shop.front.x7/api-key", "create kv secret/slipway/shop.front.x7/smtp",
	}
	if d := cmp.Diff(want, summary(p.Changes)); d != "" {
		t.Fatalf("first plan (-want +got):\n%s", d)
	}
	if err := l.Apply(ctx, p.Changes); err != nil {
		t.Fatal(err)
	}
	if r := pg.roles["shop.front.x7.orders"]; r.Comment != "slipway.dev/deployment=shop.front.x7" || r.ConnLimit != 5 || r.Privileged {
		t.Errorf("role after apply: %+v", r)
	}
	gen := b.paths["secret/data/slipway/shop.front.x7/api-key"]["data"].(map[string]any)["value"].(string)
	if len(gen) != 16 || strings.Trim(gen, "ab") != "" {
		t.Errorf("generated value has length %d or other characters than the alphabet", len(gen))
	}
	writes := b.writes
	p, err = l.Plan(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Changes) != 0 || b.writes != writes {
		t.Fatalf("second plan: %v, %d writes", summary(p.Changes), b.writes-writes)
	}
	// A generated entry is never made again, even by a change written for it.
	if err := l.Apply(ctx, []plan.CentralChange{{What: plan.CentralKV, Key: "api-key", Action: plan.Create}}); err != nil {
		t.Fatal(err)
	}
	if got := b.paths["secret/data/slipway/shop.front.x7/api-key"]["data"].(map[string]any)["value"]; got != gen {
		t.Error("the generated value was replaced")
	}
	// A changed limit and a dropped entry.
	l.Central.Logins[0].ConnectionLimit = 9
	l.Central.KV = l.Central.KV[:1]
	p, err = l.Plan(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	want = []string{"update login shop.front.x7.orders", "delete kv secret/slipway/shop.front.x7/smtp"}
	if d := cmp.Diff(want, summary(p.Changes)); d != "" {
		t.Fatalf("plan after changes (-want +got):\n%s", d)
	}
}

// TestLoginMadeAgain: a login dropped behind slipway's back is made again, and its static role
// with it (deleted, then created): OpenBao sets a password only when it creates a static
// role, so a mere update would leave the new login with none that OpenBao knows.
func TestLoginMadeAgain(t *testing.T) {
	ctx := context.Background()
	pg, b := newFakePG(), newFakeBao()
	l := testLane(testCentral(), "shop", pg, b)
	for i := range 2 {
		if i == 1 {
			delete(pg.roles, "shop.orders")
		}
		p, err := l.Plan(ctx, false)
		if err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			want := []string{"create login shop.orders", "replace static-role shop.orders"}
			if d := cmp.Diff(want, summary(p.Changes)); d != "" {
				t.Fatalf("plan after the login was dropped (-want +got):\n%s", d)
			}
		}
		if err := l.Apply(ctx, p.Changes); err != nil {
			t.Fatal(err)
		}
	}
	if got := b.passwords["database/static-roles/shop.orders"]; got != 2 {
		t.Errorf("OpenBao set the password %d times, want 2 (at the first apply and for the new login)", got)
	}
	if p, err := l.Plan(ctx, false); err != nil || len(p.Changes) != 0 {
		t.Errorf("plan after the login was made again: %v, %v", summary(p.Changes), err)
	}
}

// TestConflicts: an object of the deployment's name that it does not own stops the plan.
func TestConflicts(t *testing.T) {
	ctx := context.Background()
	for name, setup := range map[string]func(pg *fakePG, b *fakeBao){
		"database of someone else": func(pg *fakePG, _ *fakeBao) {
			pg.dbs["shop.orders"] = Database{Owner: "postgres"}
		},
		"database of another deployment": func(pg *fakePG, _ *fakeBao) {
			pg.dbs["shop.orders"] = Database{Owner: "x", Comment: "slipway.dev/deployment=other"}
		},
		"role": func(pg *fakePG, _ *fakeBao) { pg.roles["shop.orders"] = Role{Login: true} },
		"kv": func(_ *fakePG, b *fakeBao) {
			b.paths["secret/metadata/slipway/shop/api-key"] = map[string]any{"current_version": 1.0}
		},
		"static role": func(_ *fakePG, b *fakeBao) {
			b.paths["database/static-roles/shop.orders"] = map[string]any{"username": "bob", "db_name": "postgresql"}
		},
	} {
		t.Run(name, func(t *testing.T) {
			pg, b := newFakePG(), newFakeBao()
			setup(pg, b)
			_, err := testLane(testCentral(), "shop", pg, b).Plan(ctx, false)
			var ce *ConflictError
			if !errors.As(err, &ce) {
				t.Fatalf("plan: %v, want a conflict", err)
			}
			if len(pg.log) != 0 || b.writes != 0 {
				t.Errorf("the plan wrote: %v, %d", pg.log, b.writes)
			}
		})
	}
}

// TestDestroy: a protected database refuses destroy before anything goes; --keep-claims keeps
// the databases and their owners; otherwise everything marked goes, another deployment's
// objects stay.
func TestDestroy(t *testing.T) {
	ctx := context.Background()
	pg, b := newFakePG(), newFakeBao()
	for _, id := range []string{"shop", "shop.all.x7"} {
		l := testLane(testCentral(), id, pg, b)
		p, err := l.Plan(ctx, false)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Apply(ctx, p.Changes); err != nil {
			t.Fatal(err)
		}
	}
	c := testCentral()
	c.Databases[0].Protect = true
	var pe *ProtectedError
	if _, err := testLane(c, "shop", pg, b).PlanDestroy(ctx, false); !errors.As(err, &pe) {
		t.Fatalf("destroy of a protected database: %v", err)
	}
	kept, err := testLane(c, "shop", pg, b).PlanDestroy(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"delete kv secret/slipway/shop/api-key", "delete kv secret/slipway/shop/smtp"}
	if d := cmp.Diff(want, summary(kept.Changes)); d != "" || len(kept.Notes) != 1 {
		t.Errorf("--keep-claims (-want +got):\n%s\nnotes %v", d, kept.Notes)
	}
	l := testLane(testCentral(), "shop", pg, b)
	p, err := l.PlanDestroy(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	want = []string{"delete static-role shop.orders", "delete database shop.orders", "delete login shop.orders",
		"delete kv secret/slipway/shop/api-key", "delete kv secret/slipway/shop/smtp"}
	if d := cmp.Diff(want, summary(p.Changes)); d != "" {
		t.Fatalf("destroy (-want +got):\n%s", d)
	}
	if err := l.Apply(ctx, p.Changes); err != nil {
		t.Fatal(err)
	}
	if _, ok := pg.dbs["shop.all.x7.orders"]; !ok || pg.roles["shop.all.x7.orders"].Comment == "" {
		t.Error("destroying shop removed the other deployment's database or role")
	}
	if _, ok := pg.dbs["shop.orders"]; ok {
		t.Error("shop's database stayed")
	}
}

// TestNames: a name is identity.key; over 63 bytes it is shortened with a hash, which no whole
// name can equal, and two deployments never share one.
func TestNames(t *testing.T) {
	long := strings.Repeat("a", 40) + ".all." + strings.Repeat("b", 20)
	for _, c := range []struct{ identity, key, want string }{
		{"shop", "orders", "shop.orders"},
		{"shop.front.x7", "orders", "shop.front.x7.orders"},
	} {
		if got := spec.CentralName(c.identity, c.key); got != c.want {
			t.Errorf("CentralName(%q, %q) = %q, want %q", c.identity, c.key, got, c.want)
		}
	}
	n := spec.CentralName(long, "orders")
	if len(n) != 63 || !strings.Contains(n, "_") {
		t.Errorf("long name %q (%d bytes)", n, len(n))
	}
	if spec.CentralName(long, "orders") == spec.CentralName(long, "orderz") {
		t.Error("two long names collide")
	}
}
