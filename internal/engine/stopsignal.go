package engine

import (
	"context"
	"fmt"
	"sync"

	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
)

// stopSignalCheck remembers, for one run, whether the cluster keeps a container's stop
// signal: plan and apply (which plans again for a saved plan) ask the cluster once.
type stopSignalCheck struct {
	mu        sync.Mutex
	done      bool
	supported bool
	err       error
	// detect asks the cluster; tests replace it.
	detect func(ctx context.Context, ns string) (bool, error)
}

// stopSignal says whether the group's init: systemd pods get the stop signal SIGRTMIN+3
// (SPEC §5: where the cluster supports container stop signals), and, when they do not, the
// note plan shows once. A live Deployment that carries a stop signal proves support without
// a request; otherwise one server-side dry run decides, in the group's namespace when it
// exists, else in "default".
func (e *Engine) stopSignal(ctx context.Context, g *spec.Group, ns string, live map[plan.Key]plan.Object, nsExists bool) (bool, string) {
	if !hasSystemd(g) {
		return false, ""
	}
	c := &e.stop
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.done {
		switch {
		case keepsStopSignal(live):
			c.supported = true
		default:
			where := ns
			if !nsExists {
				where = "default"
			}
			detect := c.detect
			if detect == nil {
				detect = e.o.Kube.StopSignalSupported
			}
			c.supported, c.err = detect(ctx, where)
		}
		c.done = ctx.Err() == nil
	}
	return stopSignalDecision(c.supported, c.err)
}

// imageStopNote ends the note of a cluster without pod stop signals: the runtime then sends the
// image's own, which slipway sets on the images it builds for init: systemd (an archive's is
// its author's).
const imageStopNote = "they stop with their image's StopSignal (SIGRTMIN+3 in the images slipway builds for them)"

// stopSignalDecision turns what the cluster answered into the render setting and the note.
func stopSignalDecision(supported bool, err error) (bool, string) {
	switch {
	case err != nil:
		return false, fmt.Sprintf("init: systemd pods get no lifecycle.stopSignal: whether the cluster supports container stop signals is unknown (%v); "+imageStopNote, err)
	case !supported:
		return false, "init: systemd pods get no lifecycle.stopSignal, which the cluster drops (its feature gate ContainerStopSignals is off); " + imageStopNote
	}
	return true, ""
}

func hasSystemd(g *spec.Group) bool {
	for _, n := range g.Nodes {
		if n.Init == spec.InitSystemd {
			return true
		}
	}
	return false
}

// keepsStopSignal reports whether a live Deployment has a container with a stop signal: the
// server kept it, so it supports them.
func keepsStopSignal(live map[plan.Key]plan.Object) bool {
	for k, d := range live {
		if k.Kind != "Deployment" {
			continue
		}
		for _, c := range liveContainers(d) {
			if c.Lifecycle != nil && c.Lifecycle.StopSignal != nil && *c.Lifecycle.StopSignal != "" {
				return true
			}
		}
	}
	return false
}
