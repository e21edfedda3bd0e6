package statetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"slipway.dev/slipway/internal/state"
)

// Opener opens a fresh backend instance (as another process would) on one shared
// location for group.
type Opener func(t testing.TB, group string) state.Backend

// Caps are what a backend can do beyond the common contract.
type Caps struct {
	CAS         bool // Write is an atomic compare-and-swap (not HTTP: the protocol has none)
	KnowsUnlock bool // Unlock of a free lock says state.ErrNotLocked (HTTP servers answer 200)
}

// Conformance is the suite every backend passes.
func Conformance(t *testing.T, open Opener, c Caps) {
	t.Run("read-write-delete", func(t *testing.T) { testReadWriteDelete(t, open) })
	t.Run("20-concurrent-lockers", func(t *testing.T) { testConcurrentLockers(t, open, c) })
	t.Run("never-torn", func(t *testing.T) { testNeverTorn(t, open) })
	if c.CAS {
		t.Run("concurrent-writers-one-wins", func(t *testing.T) { testConcurrentWriters(t, open) })
	}
}

func testReadWriteDelete(t *testing.T, open Opener) {
	ctx := context.Background()
	b := open(t, "rwd")
	d, err := b.Read(ctx)
	if err != nil || d != nil {
		t.Fatalf("Read of an empty backend = %v, %v; want nil, nil", d, err)
	}
	doc := BigDocument("rwd", 3)
	doc.Group = ""
	if err := b.Write(ctx, doc); err != nil {
		t.Fatalf("first Write: %v", err)
	}
	if doc.Serial != 1 || doc.Lineage == "" || doc.Group != "rwd" || doc.Version != state.CurrentVersion {
		t.Fatalf("after first Write: serial %d lineage %q group %q version %d", doc.Serial, doc.Lineage, doc.Group, doc.Version)
	}
	got, err := open(t, "rwd").Read(ctx)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	if diff := cmp.Diff(doc, got); diff != "" {
		t.Fatalf("read back (-want +got):\n%s", diff)
	}

	stale := *got
	if err := b.Write(ctx, got); err != nil { // serial 1 → 2
		t.Fatalf("second Write: %v", err)
	}
	var ce *state.ConflictError
	if err := b.Write(ctx, &stale); !errors.As(err, &ce) || ce.Lineage || ce.StoredSerial != 2 || ce.GivenSerial != 1 {
		t.Fatalf("stale Write = %v; want a serial state.ConflictError (stored 2, given 1)", err)
	}
	if stale.Serial != 1 {
		t.Fatalf("a refused Write changed the document's serial to %d", stale.Serial)
	}
	foreign := *got
	foreign.Lineage = uuid.NewString()
	if err := b.Write(ctx, &foreign); !errors.As(err, &ce) || !ce.Lineage {
		t.Fatalf("foreign-lineage Write = %v; want a lineage state.ConflictError", err)
	}
	fresh := BigDocument("rwd", 1) // a new document (serial 0, no lineage) over an existing state
	if err := b.Write(ctx, fresh); !errors.As(err, &ce) {
		t.Fatalf("Write of a new document over an existing state = %v; want a state.ConflictError", err)
	}
	other := BigDocument("other", 1)
	if err := b.Write(ctx, other); err == nil {
		t.Fatal("Write of another group's document succeeded")
	}

	if err := b.Delete(ctx); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if d, err := b.Read(ctx); err != nil || d != nil {
		t.Fatalf("Read after Delete = %v, %v; want nil, nil", d, err)
	}
	if err := b.Delete(ctx); err != nil {
		t.Fatalf("second Delete: %v", err)
	}
}

func testConcurrentLockers(t *testing.T, open Opener, c Caps) {
	ctx := context.Background()
	const n = 20
	backends := make([]state.Backend, n)
	for i := range backends {
		backends[i] = open(t, "lockers")
	}
	type result struct {
		id  string
		err error
	}
	results := make([]result, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			info := state.NewInfo(fmt.Sprintf("apply-%d", i))
			id, err := backends[i].Lock(ctx, info)
			results[i] = result{id, err}
		})
	}
	close(start)
	wg.Wait()

	winner := -1
	for i, r := range results {
		if r.err == nil {
			if winner >= 0 {
				t.Fatalf("lockers %d and %d both won", winner, i)
			}
			winner = i
		}
	}
	if winner < 0 {
		t.Fatalf("no locker won: %v", results[0].err)
	}
	winID := results[winner].id
	for i, r := range results {
		if i == winner {
			continue
		}
		var le *state.LockError
		if !errors.As(r.err, &le) {
			t.Fatalf("locker %d: err = %v; want a state.LockError", i, r.err)
		}
		if le.Holder.ID != winID || le.Holder.Operation != fmt.Sprintf("apply-%d", winner) {
			t.Errorf("locker %d: state.LockError names %s; want the winner (apply-%d, lock ID %s)", i, le.Holder, winner, winID)
		}
	}
	info, err := backends[3].LockInfo(ctx)
	if err != nil || info == nil || info.ID != winID {
		t.Fatalf("LockInfo = %v, %v; want the winner %s", info, err, winID)
	}
	var lie *state.LockIDError
	if err := backends[5].Unlock(ctx, uuid.NewString()); !errors.As(err, &lie) || lie.Holder.ID != winID {
		t.Fatalf("Unlock with a wrong ID = %v; want a state.LockIDError naming the winner", err)
	}
	if err := backends[7].Unlock(ctx, winID); err != nil { // state unlock from elsewhere
		t.Fatalf("Unlock of the winner from another instance: %v", err)
	}
	if info, err := backends[0].LockInfo(ctx); err != nil || info != nil {
		t.Fatalf("LockInfo after Unlock = %v, %v; want nil", info, err)
	}
	if err := backends[winner].Unlock(ctx, winID); c.KnowsUnlock && !errors.Is(err, state.ErrNotLocked) {
		t.Fatalf("second Unlock = %v; want state.ErrNotLocked", err)
	}
	id, err := backends[1].Lock(ctx, state.NewInfo("apply"))
	if err != nil {
		t.Fatalf("Lock after Unlock: %v", err)
	}
	if err := backends[1].Unlock(ctx, id); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
}

// testNeverTorn has one lock holder write while readers read: every read parses and the serial
// a reader sees never goes back.
func testNeverTorn(t *testing.T, open Opener) {
	ctx := context.Background()
	w := open(t, "torn")
	id, err := w.Lock(ctx, state.NewInfo("apply"))
	if err != nil {
		t.Fatalf("Lock: %v", err)
	}
	defer func() {
		if err := w.Unlock(ctx, id); err != nil {
			t.Errorf("Unlock: %v", err)
		}
	}()
	const writes = 30
	var done atomic.Bool
	var reads atomic.Int64
	var wg sync.WaitGroup
	for r := range 4 {
		rb := open(t, "torn")
		wg.Go(func() {
			var last int64
			for !done.Load() {
				d, err := rb.Read(ctx)
				if err != nil {
					t.Errorf("reader %d: %v", r, err)
					return
				}
				reads.Add(1)
				if d == nil {
					continue
				}
				if d.Serial < last {
					t.Errorf("reader %d: serial went back from %d to %d", r, last, d.Serial)
					return
				}
				if len(d.Nodes) != 200 {
					t.Errorf("reader %d: %d nodes; want 200", r, len(d.Nodes))
					return
				}
				last = d.Serial
			}
		})
	}
	doc := BigDocument("torn", 200)
	var prev int64
	for i := range writes {
		doc.Nodes["node-0"].Image.Tag = fmt.Sprint(i)
		if err := w.Write(ctx, doc); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		if doc.Serial <= prev {
			t.Fatalf("write %d: serial %d not above %d", i, doc.Serial, prev)
		}
		prev = doc.Serial
	}
	done.Store(true)
	wg.Wait()
	if prev != writes {
		t.Fatalf("final serial %d; want %d", prev, writes)
	}
	t.Logf("%d writes, %d concurrent reads, all parsed", writes, reads.Load())
}

// testConcurrentWriters: writers that read the same serial race; exactly one write wins.
func testConcurrentWriters(t *testing.T, open Opener) {
	ctx := context.Background()
	seed := BigDocument("cas", 2)
	if err := open(t, "cas").Write(ctx, seed); err != nil {
		t.Fatal(err)
	}
	const n = 10
	var wins atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		b := open(t, "cas")
		d := *seed
		wg.Go(func() {
			<-start
			d.Namespace = fmt.Sprint(i)
			err := b.Write(ctx, &d)
			var ce *state.ConflictError
			switch {
			case err == nil:
				wins.Add(1)
			case !errors.As(err, &ce):
				t.Errorf("writer %d: %v; want nil or a state.ConflictError", i, err)
			}
		})
	}
	close(start)
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d writers won; want exactly 1", wins.Load())
	}
	got, err := open(t, "cas").Read(ctx)
	if err != nil || got.Serial != 2 {
		t.Fatalf("after the race: %v, %v; want serial 2", got, err)
	}
}
