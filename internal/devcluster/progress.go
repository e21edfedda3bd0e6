package devcluster

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// stalePackages lists the packages `go build -trimpath pkgs` in dir will compile: every
// dependency the build cache lacks (the standard library too, on a cold cache), so that a
// build's progress can be told as a share of them.
func stalePackages(ctx context.Context, goBin, dir string, env, pkgs []string) (map[string]bool, error) {
	args := append([]string{"list", "-trimpath", "-deps", "-f", "{{if .Stale}}{{.ImportPath}}{{end}}"}, pkgs...)
	cmd := exec.CommandContext(ctx, goBin, args...)
	cmd.Dir, cmd.Env = dir, env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go list: %w; last output:\n%s", err, lastLines(stderr.String(), 40))
	}
	todo := map[string]bool{}
	for _, p := range strings.Fields(stdout.String()) {
		todo[p] = true
	}
	return todo, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// buildProgress counts the packages `go build -v` reports compiled among those it has to
// compile (stalePackages); other lines (go: downloading …) are not packages.
type buildProgress struct {
	module string
	start  time.Time

	mu   sync.Mutex
	todo map[string]bool
	done int
}

func newBuildProgress(module string, todo map[string]bool, start time.Time) *buildProgress {
	return &buildProgress{module: module, todo: todo, start: start}
}

// line takes one line of `go build -v` output.
func (p *buildProgress) line(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.todo[s] {
		delete(p.todo, s) // each package counts once
		p.done++
	}
}

// String is e.g. "kube: 412 of 2648 packages (15%), 3m0s".
func (p *buildProgress) String(now time.Time) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	total := p.done + len(p.todo)
	pct := 100
	if total > 0 {
		pct = p.done * 100 / total
	}
	return fmt.Sprintf("%s: %d of %d packages (%d%%), %s", p.module, p.done, total, pct, now.Sub(p.start).Round(time.Second))
}

// report writes the progress to w every interval until the returned func is called, so that
// a fifteen-minute build does not look hung.
func (p *buildProgress) report(w io.Writer, interval time.Duration) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-tick.C:
				fmt.Fprintf(w, "dev:   %s\n", p.String(now))
			}
		}
	}()
	return func() { close(done); <-finished }
}

// scanBuild feeds every line of r to the progress and the tail.
func scanBuild(r io.Reader, p *buildProgress, tail *tailBuf) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		p.line(sc.Text())
		tail.add(sc.Text())
	}
}
