package central

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
)

// applied makes the objects of c for identity on the stand-ins.
func applied(t *testing.T, c *spec.Central, identity string, pg *fakePG, b *fakeBao) {
	t.Helper()
	l := testLane(c, identity, pg, b)
	p, err := l.Plan(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Apply(context.Background(), p.Changes); err != nil {
		t.Fatal(err)
	}
}

// recordedLane is the lane of a file without `central:`, built on the state's record.
func recordedLane(t *testing.T, identity string, pg *fakePG, b *fakeBao, protected ...string) *Lane {
	t.Helper()
	rec, err := Recorded("database", "postgresql", "secret", protected, nil)
	if err != nil {
		t.Fatal(err)
	}
	l := testLane(rec, identity, pg, b)
	l.Recorded = rec
	return l
}

// TestRetire: with `central:` removed, the lane built on the state's record plans the removal
// of every object with the deployment's mark (another deployment's stay), apply removes them
// and a second plan has nothing to do.
func TestRetire(t *testing.T) {
	ctx := context.Background()
	pg, b := newFakePG(), newFakeBao()
	applied(t, testCentral(), "shop", pg, b)
	applied(t, testCentral(), "shop.all.x7", pg, b)
	l := recordedLane(t, "shop", pg, b)
	p, err := l.PlanRetire(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"delete static-role shop.orders", "delete database shop.orders", "delete login shop.orders",
		"delete kv secret/slipway/shop/api-key", "delete kv secret/slipway/shop/smtp"}
	if d := cmp.Diff(want, summary(p.Changes)); d != "" {
		t.Fatalf("plan without central: (-want +got):\n%s", d)
	}
	if got := p.Changes[1].Reason; got != "its data is lost; the file has no central: any more" {
		t.Errorf("reason %q", got)
	}
	if err := l.Apply(ctx, p.Changes); err != nil {
		t.Fatal(err)
	}
	if _, ok := pg.dbs["shop.orders"]; ok || pg.roles["shop.orders"].Comment != "" || b.paths["database/static-roles/shop.orders"] != nil {
		t.Error("shop's database, login or static role stayed")
	}
	if _, ok := pg.dbs["shop.all.x7.orders"]; !ok || b.paths["secret/metadata/slipway/shop.all.x7/api-key"] == nil {
		t.Error("the other deployment's objects were removed")
	}
	writes, stmts := b.writes, len(pg.log)
	if p, err := l.PlanRetire(ctx, false); err != nil || len(p.Changes) != 0 || b.writes != writes || len(pg.log) != stmts {
		t.Errorf("second plan: %v, %v, %d writes", summary(p.Changes), err, b.writes-writes)
	}
}

// TestRetireProtected: a database the state records protected stops the plan without
// `central:` (and a plan whose file dropped only that database); --keep-claims keeps it, with
// its owner and static role, and says so; a saved plan that drops it anyway is refused.
func TestRetireProtected(t *testing.T) {
	ctx := context.Background()
	pg, b := newFakePG(), newFakeBao()
	applied(t, testCentral(), "shop", pg, b)
	var pe *ProtectedError
	if _, err := recordedLane(t, "shop", pg, b, "orders").PlanRetire(ctx, false); !errors.As(err, &pe) || !pe.Removed {
		t.Fatalf("plan without central: of a protected database: %v", err)
	}
	if _, err := recordedLane(t, "shop", pg, b, "orders").PlanDestroy(ctx, false); !errors.As(err, &pe) || !pe.Removed {
		t.Fatalf("destroy without central: of a protected database: %v", err)
	}
	dropped := testCentral()
	dropped.Databases = nil
	l := testLane(dropped, "shop", pg, b)
	l.Recorded, _ = Recorded("database", "postgresql", "secret", []string{"orders"}, nil)
	if _, err := l.Plan(ctx, false); !errors.As(err, &pe) {
		t.Fatalf("plan of a file without the protected database: %v", err)
	}
	l = recordedLane(t, "shop", pg, b, "orders")
	kept, err := l.PlanRetire(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"delete kv secret/slipway/shop/api-key", "delete kv secret/slipway/shop/smtp"}
	if d := cmp.Diff(want, summary(kept.Changes)); d != "" || len(kept.Notes) != 1 {
		t.Errorf("--keep-claims (-want +got):\n%s\nnotes %v", d, kept.Notes)
	}
	drop := []plan.CentralChange{{What: plan.CentralDatabase, Name: "shop.orders", Action: plan.Delete}}
	if err := l.Apply(ctx, drop); !errors.As(err, &pe) {
		t.Errorf("a saved plan dropping the protected database: %v", err)
	}
	if _, ok := pg.dbs["shop.orders"]; !ok {
		t.Error("the protected database was dropped")
	}
}

// TestProtectRecorded: a database whose protect differs from the state's record is an update
// (apply writes the record before it), none once they agree; the file's protect rules a
// database it has.
func TestProtectRecorded(t *testing.T) {
	ctx := context.Background()
	pg, b := newFakePG(), newFakeBao()
	applied(t, testCentral(), "shop", pg, b)
	c := testCentral()
	c.Databases[0].Protect = true
	l := testLane(c, "shop", pg, b)
	l.Recorded, _ = Recorded("database", "postgresql", "secret", nil, nil)
	p, err := l.Plan(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"update database shop.orders"}, summary(p.Changes)); d != "" {
		t.Fatalf("protect set (-want +got):\n%s", d)
	}
	l.Recorded, _ = Recorded("database", "postgresql", "secret", ProtectedKeys(c), nil)
	if p, err := l.Plan(ctx, false); err != nil || len(p.Changes) != 0 {
		t.Errorf("protect recorded: %v, %v", summary(p.Changes), err)
	}
	c.Databases[0].Protect = false // unset in the file: lifted, whatever the record says
	if _, err := l.PlanDestroy(ctx, false); err != nil {
		t.Errorf("destroy after protect was unset in the file: %v", err)
	}
}

// TestRecordedChecked: a record read back from a state is checked like the group file.
func TestRecordedChecked(t *testing.T) {
	for name, r := range map[string][4]string{
		"path in a mount": {"database/../sys", "postgresql", "secret", "orders"},
		"empty kv mount":  {"database", "postgresql", "", "orders"},
		"protected key":   {"database", "postgresql", "secret", "Orders;DROP"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Recorded(r[0], r[1], r[2], []string{r[3]}, nil); err == nil {
				t.Error("accepted")
			}
		})
	}
}
