package cli

import (
	"context"
	"io"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
	"slipway.dev/slipway/internal/waves"
)

// meetingBackend is a file state backend whose first Lock of each run waits at meet until
// every run has come to its first lock: the two runs of TestWavesLockOrder take their first
// locks at the same moment, the interleaving that made two waves files deadlock.
type meetingBackend struct {
	state.Backend
	first *sync.Once
	meet  *sync.WaitGroup
}

func (b meetingBackend) Lock(ctx context.Context, info state.Info) (string, error) {
	b.first.Do(func() { b.meet.Done(); b.meet.Wait() })
	return b.Backend.Lock(ctx, info)
}

// TestWavesLockOrder (issue 46 item 7): two waves files listing the same groups in opposite
// orders, run at once, both take every lock: one waits for the other, neither waits forever.
// In file order, each took its first group and then waited, until its lock timeout, for the
// lock the other held.
func TestWavesLockOrder(t *testing.T) {
	was := lockStderr
	lockStderr = io.Discard
	t.Cleanup(func() { lockStderr = was })
	dir := t.TempDir()
	ctx := context.Background()
	var meet sync.WaitGroup
	meet.Add(2)
	run := func(name string, order ...string) *wavesRun {
		f := &waves.File{Path: name}
		r := &wavesRun{file: f, units: map[string]*waveUnit{}}
		first := &sync.Once{}
		for _, group := range order {
			b, err := state.Open(ctx, "file://"+filepath.Join(dir, group+".json"), group, nil)
			if err != nil {
				t.Fatal(err)
			}
			w := &waves.Group{Name: "entry-" + group}
			f.Groups = append(f.Groups, w)
			r.units[w.Name] = &waveUnit{w: w, s: &session{group: &spec.Group{Name: group}, backend: meetingBackend{b, first, &meet}}}
		}
		return r
	}
	runs := []*wavesRun{run("a.yaml", "shop.front", "shop.data"), run("b.yaml", "shop.data", "shop.front")}
	if got := lockOrder(runs[1].ordered(false)); got[0].s.group.Name != "shop.data" || got[1].s.group.Name != "shop.front" {
		t.Errorf("lockOrder = %s, %s; want shop.data, shop.front (by identity, whatever the file's order)", got[0].s.group.Name, got[1].s.group.Name)
	}
	errs := make([]error, len(runs))
	var wg sync.WaitGroup
	for i, r := range runs {
		wg.Go(func() {
			// Long enough for the other run to take both locks and let them go; far shorter
			// than a deadlock, which only the timeout ends.
			if errs[i] = r.lock(ctx, "apply", 10*time.Second, r.ordered(false)); errs[i] == nil {
				errs[i] = r.unlockAll()
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("run of %s: %v", runs[i].file.Path, err)
		}
	}
}
