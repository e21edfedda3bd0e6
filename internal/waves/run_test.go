package waves

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/status"
)

// example: platform <- config <- {app-a, app-b}; tools alone.
func example(t *testing.T) *File {
	t.Helper()
	f, err := Parse("waves.yaml", doc(
		"groups:",
		"  - {name: platform, file: platform.yaml}",
		"  - {name: config, file: config.yaml, dependsOn: [platform]}",
		"  - {name: app-a, file: a.yaml, dependsOn: [config]}",
		"  - {name: app-b, file: b.yaml, dependsOn: [config, tools]}",
		"  - {name: tools, file: tools.yaml}",
	))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// summary is each outcome as one word: ok, failed, stopped-by-<names>.
func summary(out []Outcome) []string {
	var s []string
	for _, o := range out {
		switch {
		case o.Failed():
			s = append(s, o.Group.Name+":failed")
		case len(o.Stopped) > 0:
			s = append(s, o.Group.Name+":stopped-by-"+strings.Join(o.Stopped, "+"))
		case o.Ran:
			s = append(s, o.Group.Name+":ok")
		default:
			s = append(s, o.Group.Name+":"+fmt.Sprint(o.Err))
		}
	}
	return s
}

func TestRun(t *testing.T) {
	tests := []struct {
		name    string
		fail    string
		reverse bool
		want    []string
	}{
		{"all succeed", "", false, []string{"platform:ok", "config:ok", "app-a:ok", "tools:ok", "app-b:ok"}},
		{"a failed dependency stops its dependents, independents go on", "config", false,
			[]string{"platform:ok", "config:failed", "app-a:stopped-by-config", "tools:ok", "app-b:stopped-by-config"}},
		{"stopped in turn names the root", "platform", false,
			[]string{"platform:failed", "config:stopped-by-platform", "app-a:stopped-by-platform", "tools:ok", "app-b:stopped-by-platform"}},
		{"reverse: dependents first", "", true, []string{"app-b:ok", "tools:ok", "app-a:ok", "config:ok", "platform:ok"}},
		{"reverse: a failed dependent keeps what it depends on", "app-b", true,
			[]string{"app-b:failed", "tools:stopped-by-app-b", "app-a:ok", "config:stopped-by-app-b", "platform:stopped-by-app-b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := example(t)
			var mu sync.Mutex
			var ran []string
			out := Run(context.Background(), f, 1, tt.reverse, func(_ context.Context, g *Group) error {
				mu.Lock()
				ran = append(ran, g.Name)
				mu.Unlock()
				if g.Name == tt.fail {
					return errors.New("boom")
				}
				return nil
			})
			if d := cmp.Diff(tt.want, summary(out)); d != "" {
				t.Errorf("outcomes (-want +got):\n%s", d)
			}
			// Each group ran only after everything it waits on ran.
			for i, name := range ran {
				g := f.Group(name)
				waits := g.DependsOn
				if tt.reverse {
					waits = f.Dependents(name)
				}
				for _, w := range waits {
					if !slices.Contains(ran[:i], w) {
						t.Errorf("%s ran before %s", name, w)
					}
				}
			}
		})
	}
}

// TestRunParallel: independent groups run at once, never more than n.
func TestRunParallel(t *testing.T) {
	f, err := Parse("waves.yaml", doc(
		"groups:",
		"  - {name: base, file: base.yaml}",
		"  - {name: a, file: a.yaml, dependsOn: [base]}",
		"  - {name: b, file: b.yaml, dependsOn: [base]}",
		"  - {name: c, file: c.yaml, dependsOn: [base]}",
		"  - {name: d, file: d.yaml, dependsOn: [base]}",
	))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 2, 4} {
		var mu sync.Mutex
		now, peak := 0, 0
		release := make(chan struct{})
		started := make(chan string, 5)
		go func() {
			// base alone; then hold each start until n have started (or all that remain).
			<-started
			release <- struct{}{}
			for left := 4; left > 0; {
				k := min(n, left)
				for range k {
					<-started
				}
				for range k {
					release <- struct{}{}
				}
				left -= k
			}
		}()
		Run(context.Background(), f, n, false, func(_ context.Context, g *Group) error {
			mu.Lock()
			now++
			peak = max(peak, now)
			mu.Unlock()
			started <- g.Name
			<-release
			mu.Lock()
			now--
			mu.Unlock()
			return nil
		})
		if peak != min(n, 4) {
			t.Errorf("n=%d: %d ran at once, want %d", n, peak, min(n, 4))
		}
	}
}

func TestRunCancelled(t *testing.T) {
	f := example(t)
	ctx, cancel := context.WithCancel(context.Background())
	out := Run(ctx, f, 1, false, func(_ context.Context, g *Group) error {
		if g.Name == "config" {
			cancel()
		}
		return nil
	})
	want := []string{"platform:ok", "config:ok", "app-a:group app-a: not started: context canceled", "tools:group tools: not started: context canceled", "app-b:group app-b: not started: context canceled"}
	if d := cmp.Diff(want, summary(out)); d != "" {
		t.Errorf("outcomes (-want +got):\n%s", d)
	}
}

func TestUnhealthy(t *testing.T) {
	ready := status.Node{Node: "web", Phase: status.Ready, Ready: 1, Replicas: 1, InFile: true, LastRollout: &event.Rollout{Result: event.RolloutReady}}
	with := func(f func(n *status.Node)) *status.Group {
		n := ready
		f(&n)
		return &status.Group{Applied: true, Nodes: []status.Node{n}}
	}
	tests := []struct {
		name string
		st   *status.Group
		want []string
	}{
		{"healthy", with(func(*status.Node) {}), nil},
		{"not applied", &status.Group{}, []string{"not applied"}},
		{"suspended", &status.Group{Applied: true, Suspended: true}, []string{"suspended"}},
		{"rolled back", with(func(n *status.Node) { n.LastRollout = &event.Rollout{Result: event.RolloutRolledBack}; n.Drift = true }),
			[]string{"node web: last rollout rolled-back"}},
		{"failing", with(func(n *status.Node) { n.Phase, n.Reason, n.Ready = status.Failed, "CrashLoopBackOff", 0 }),
			[]string{"node web: failed: CrashLoopBackOff"}},
		{"a role short", with(func(n *status.Node) {
			n.Roles = []status.Role{{Name: "worker", Phase: status.Progressing, Ready: 1, Want: 2}}
		}), []string{"node web: role worker: progressing, 1/2 ready"}},
		{"names disagree", with(func(n *status.Node) { n.DNS = "www.example.org: A 192.0.2.1, want 192.0.2.2" }),
			[]string{"node web: published names: www.example.org: A 192.0.2.1, want 192.0.2.2"}},
		{"a node that left the file", with(func(n *status.Node) { n.InFile, n.Phase = false, status.Absent }), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d := cmp.Diff(tt.want, Unhealthy(tt.st)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

// TestUpstream: what a group waits on, directly or not, is what must stay healthy while it
// rolls out (issue 46 item 7).
func TestUpstream(t *testing.T) {
	f := example(t)
	for name, want := range map[string][]string{
		"platform": nil,
		"config":   {"platform"},
		"app-a":    {"platform", "config"},
		"app-b":    {"platform", "config", "tools"},
		"unknown":  nil,
	} {
		if d := cmp.Diff(want, f.Upstream(name)); d != "" {
			t.Errorf("Upstream(%s) (-want +got):\n%s", name, d)
		}
	}
}
