package engine

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"slipway.dev/slipway/internal/state"
)

// gateStore is a state.Store whose first write waits for release; it keeps the node names
// of every document written.
type gateStore struct {
	release chan struct{}
	mu      sync.Mutex
	written [][]string
}

func (g *gateStore) Read(context.Context) (*state.Document, error) { return nil, nil }
func (g *gateStore) Delete(context.Context) error                  { return nil }

func (g *gateStore) Write(_ context.Context, d *state.Document) error {
	g.mu.Lock()
	first := len(g.written) == 0
	var names []string
	for n := range d.Nodes {
		names = append(names, n)
	}
	sort.Strings(names)
	g.written = append(g.written, names)
	g.mu.Unlock()
	if first {
		<-g.release
	}
	return nil
}

// Issue 17: concurrent state updates share writes (a group commit), and each returns only
// once a written document holds its change. Before, 10 updates were 10 writes of the whole
// document, one at a time: quadratic in the group for a first apply.
func TestRecorderGroupCommit(t *testing.T) {
	store := &gateStore{release: make(chan struct{})}
	rec := newRecorder(store, &state.Document{Group: "g"})
	var wg sync.WaitGroup
	errs := make([]error, 10)
	for i := range 10 {
		wg.Go(func() {
			errs[i] = rec.Update(context.Background(), "test", func(d *state.Document) {
				rec.node(fmt.Sprintf("n%d", i))
			})
		})
	}
	// Every update is queued (nine of them while the first write is held) before it lands.
	queued := func() int64 {
		rec.pmu.Lock()
		defer rec.pmu.Unlock()
		return rec.queued
	}
	deadline := time.Now().Add(10 * time.Second)
	for queued() < 10 {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of 10 updates queued", queued())
		}
		time.Sleep(time.Millisecond)
	}
	close(store.release)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("update %d: %v", i, err)
		}
	}
	if len(store.written) > 2 {
		t.Errorf("10 concurrent updates made %d writes, want at most 2 (the held one and one for the rest)", len(store.written))
	}
	var all []string
	for i := range 10 {
		all = append(all, fmt.Sprintf("n%d", i))
	}
	sort.Strings(all)
	if diff := cmp.Diff(all, store.written[len(store.written)-1]); diff != "" {
		t.Errorf("last document written (-want +got):\n%s", diff)
	}
}
