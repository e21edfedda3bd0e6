package cli

// A waves file (issue 38) drives the single-group engine once per group: each group has its
// own session (group file, target, namespace, state, lock), its events go to one printer
// tagged with the group's name, and internal/waves orders and gates them.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"slipway.dev/slipway/internal/engine"
	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/ui"
	"slipway.dev/slipway/internal/waves"
)

// waveUnit is one group of a waves file with its session.
type waveUnit struct {
	w      *waves.Group
	s      *session
	plan   *plan.Plan
	lockID string // "" while its lock is not held
	// healthy: the group has no changes and was healthy when planned, so its dependents need
	// not wait for another look (a no-op run gates every group at once, not wave by wave).
	healthy bool
}

// wavesRun is a verb's run over a waves file.
type wavesRun struct {
	g       *Globals
	file    *waves.File
	units   map[string]*waveUnit
	printer ui.Printer
	stdout  io.Writer
	stderr  io.Writer
	mu      sync.Mutex // guards each unit's lockID: groups unlock from their own goroutines
	shared  *engine.SharedReads
}

// loadWaves returns the waves file -f names, or nil when it is a group file.
func loadWaves(g *Globals) (*waves.File, error) {
	if !waves.IsFile(g.File) {
		return nil, nil
	}
	if err := checkWavesSettings(g); err != nil {
		return nil, err
	}
	return waves.Load(g.File)
}

// checkWavesSettings refuses the settings that would put every group of a waves file in one
// place: a namespace, a target, or a state location that holds one group (a kubernetes://
// state keeps each group in a Secret of its own).
func checkWavesSettings(g *Globals) error {
	switch {
	case g.Namespace != "" || os.Getenv("K8S_NAMESPACE") != "":
		return fmt.Errorf("waves file %s: -n and K8S_NAMESPACE would put every group in one namespace: each group's namespace is its group file's (unset them)", g.File)
	case g.perApp():
		return fmt.Errorf("waves file %s: --target %s: a waves file names each group's target (target: in the file)", g.File, g.Target)
	}
	if url := g.StateURL("x"); (g.State != "" || os.Getenv("SLIPWAY_STATE") != "") && !isKubeURL(url) {
		return fmt.Errorf("waves file %s: state %s would hold every group's state in one place: use kubernetes://NAMESPACE, or state: per group in the waves file", g.File, url)
	}
	return nil
}

// openWaves opens a session per group, sharing one cluster connection and one printer, and
// refuses two groups that would share a namespace or a state. With share, the groups' engines
// read the cluster through one engine.SharedReads (r.shared) until it is stopped: what the
// verbs that plan or look at every group at once (plan, apply, status) read once, not per
// group.
func openWaves(cmd *cobra.Command, g *Globals, f *waves.File, withImages, share bool) (*wavesRun, error) {
	if err := checkOutput(g); err != nil {
		return nil, err
	}
	kc, err := openKube(cmd.Context(), g)
	if err != nil {
		return nil, err
	}
	r := &wavesRun{g: g, file: f, units: map[string]*waveUnit{}, stdout: cmd.OutOrStdout(), stderr: cmd.ErrOrStderr()}
	if share {
		r.shared = engine.NewSharedReads(kc)
	}
	r.printer = newPrinter(g, r.stdout, r.stderr)
	namespaces, states := map[string]string{}, map[string]string{}
	for _, w := range f.Groups {
		gg := *g
		gg.File, gg.Target, gg.kube, gg.shared, gg.printer = w.File, w.Target, kc, r.shared, r.printer
		if w.State != "" {
			gg.State = w.State
		}
		s, err := openSession(cmd.Context(), &gg, withImages, r.stdout, r.stderr)
		if err != nil {
			r.printer.Close()
			return nil, fmt.Errorf("waves file %s: group %s (line %d): %w", f.Path, w.Name, w.Line, err)
		}
		s.engine.SetEmit(r.tag(w.Name))
		loc := s.backend.Location()
		for seen, what := range map[string]map[string]string{s.ns: namespaces, loc: states} {
			if other, ok := what[seen]; ok {
				r.printer.Close()
				return nil, fmt.Errorf("waves file %s: groups %s and %s share %s: each group needs its own namespace and state", f.Path, other, w.Name, seen)
			}
			what[seen] = w.Name
		}
		r.units[w.Name] = &waveUnit{w: w, s: s}
	}
	return r, nil
}

// tag sends a group's events to the run's printer: JSON lines carry the group's name, text
// lines show it before the node.
func (r *wavesRun) tag(group string) func(event.Event) {
	json := r.g.Output == "json"
	return func(e event.Event) {
		if json {
			e.Group = group
		} else if e.Node == "" {
			e.Node = group
		} else {
			e.Node = group + "/" + e.Node
		}
		r.printer.Event(e)
	}
}

// say reports a group's own outcome as an event of the group as a whole.
func (r *wavesRun) say(group string, phase event.Phase, msg string) {
	r.tag(group)(event.Event{Time: time.Now(), Phase: phase, Message: msg})
}

// heading introduces a group's part of the text output.
func (u *waveUnit) heading() string {
	return fmt.Sprintf("Group %s (%s, target %s, namespace %s):", u.w.Name, u.w.File, u.w.Target, u.s.ns)
}

// outcomeError is the run's error from its outcomes: nil when every group ran and succeeded.
func outcomeError(f *waves.File, verb string, out []waves.Outcome) error {
	var errs []error
	for _, o := range out {
		switch {
		case o.Failed():
			errs = append(errs, fmt.Errorf("group %s: %w", o.Group.Name, o.Err))
		case len(o.Stopped) > 0:
			errs = append(errs, fmt.Errorf("group %s: not %s: %s", o.Group.Name, verb, stoppedBy(o, verb)))
		case o.Err != nil:
			errs = append(errs, o.Err)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("waves file %s: %w", f.Path, errors.Join(errs...))
}

// stoppedBy says why a group did not run: the groups that failed before it.
func stoppedBy(o waves.Outcome, verb string) string {
	if verb == "destroyed" {
		return "groups that depend on it were not destroyed: " + strings.Join(o.Stopped, ", ")
	}
	return "it depends on " + strings.Join(o.Stopped, ", ") + ", which failed"
}

// connect connects to the cluster, or returns the connection a waves run shares.
func (g *Globals) connect(ctx context.Context) (*kube.Client, error) {
	if g.kube != nil {
		return g.kube, nil
	}
	return openKube(ctx, g)
}
