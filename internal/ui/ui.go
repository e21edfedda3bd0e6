// Package ui renders what the engine reports: plans as text or JSON on stdout, and progress
// events on stderr as a live view (a terminal: one line per node, redrawn), as plain
// timestamped lines (no terminal), or as JSON lines (-o json, on stdout). It holds no logic
// about deployments; it only formats.
package ui

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/quote"
)

// q is a value as text prints it on one line: escape codes and every other non-printable
// byte quoted. Names, images, versions, diff values, notes and reasons reach the printers from
// the cluster, a state backend, a DNS or SPIRE server or a saved plan, and a value such as
// `ok\x1b[2K\x1b[1ANo changes.` must not rewrite what is on the screen (issue 35, issue 43
// item 11): every value a text printer writes goes through q (or quote.Line) once.
func q(s string) string { return quote.Line(s) }

// Printer renders events.
type Printer interface {
	Event(event.Event)
	// Close flushes what is left (the live view's last frame).
	Close()
}

// NewJSON prints each event as one JSON line.
func NewJSON(w io.Writer) Printer { return &jsonPrinter{enc: json.NewEncoder(w)} }

type jsonPrinter struct {
	mu  sync.Mutex
	enc *json.Encoder
}

func (p *jsonPrinter) Event(e event.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	_ = p.enc.Encode(struct {
		Version int `json:"version"`
		event.Event
	}{JSONVersion, e})
}
func (p *jsonPrinter) Close() {}

// NewPlain prints one timestamped line per event (the image publisher thins upload progress).
func NewPlain(w io.Writer) Printer { return &plainPrinter{w: w} }

type plainPrinter struct {
	mu sync.Mutex
	w  io.Writer
}

func (p *plainPrinter) Event(e event.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintln(p.w, plainLine(e))
}
func (p *plainPrinter) Close() {}

func plainLine(e event.Event) string {
	node := e.Node
	if node == "" {
		node = "group"
	}
	// One line per event: a message may carry the cluster's words (quote.Line).
	msg := quote.Line(describe(e))
	return fmt.Sprintf("%s %-12s %-11s %s", e.Time.Format("15:04:05"), node, e.Phase, msg)
}

func describe(e event.Event) string {
	msg := e.Message
	if e.Image != nil && msg == "" {
		msg = fmt.Sprintf("%s %s of %s", e.Image.Name, size(e.Image.Done), size(e.Image.Total))
	}
	if e.Phase == event.PhaseRollout && e.Desired > 0 {
		msg = fmt.Sprintf("%d/%d ready  %s", e.Ready, e.Desired, msg)
	}
	return msg
}

func size(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// NewLive redraws one line per node on a terminal: phase, ready pods, elapsed, last message.
// A failure shows in its node's line; the command's error says it in full.
func NewLive(w io.Writer) Printer {
	l := &livePrinter{w: w, rows: map[string]*row{}, start: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	go l.loop()
	return l
}

type row struct {
	phase          event.Phase
	ready, desired int32
	msg            string
	since          time.Time
	finished       bool
}

type livePrinter struct {
	mu        sync.Mutex
	w         io.Writer
	rows      map[string]*row
	order     []string
	drawn     int
	start     time.Time
	failures  []string
	reported  int // failures already printed by an earlier Close
	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

func (l *livePrinter) Event(e event.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	name := e.Node
	if name == "" {
		name = "group"
	}
	r := l.rows[name]
	if r == nil {
		r = &row{since: e.Time}
		l.rows[name] = r
		l.order = append(l.order, name)
	}
	r.phase = e.Phase
	if e.Desired > 0 || e.Phase == event.PhaseRollout {
		r.ready, r.desired = e.Ready, e.Desired
	}
	if m := describe(e); m != "" {
		r.msg = m
	}
	if e.Phase == event.PhaseDone || e.Phase == event.PhaseFailed || e.Phase == event.PhaseUnchanged {
		r.finished = true
	}
}

func (l *livePrinter) loop() {
	defer close(l.done)
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			l.draw()
			return
		case <-t.C:
			l.draw()
		}
	}
}

func (l *livePrinter) draw() {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	if l.drawn > 0 {
		fmt.Fprintf(&b, "\x1b[%dA", l.drawn)
	}
	names := slices.Clone(l.order)
	for _, n := range names {
		r := l.rows[n]
		elapsed := time.Since(r.since).Round(time.Second)
		msg := quote.Line(strings.SplitN(r.msg, "\n", 2)[0])
		if len(msg) > 80 {
			msg = msg[:77] + "..."
		}
		fmt.Fprintf(&b, "\x1b[2K%-14s %-11s %3d/%-3d %6s  %s\n", n, r.phase, r.ready, r.desired, elapsed, msg)
	}
	l.drawn = len(names)
	_, _ = io.WriteString(l.w, b.String())
}

// Close stops the view after a last frame; closing twice is harmless.
func (l *livePrinter) Close() {
	l.closeOnce.Do(func() { close(l.stop) })
	<-l.done
}
