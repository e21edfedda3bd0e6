package engine

import (
	"context"
	"fmt"

	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/parallel"
	"slipway.dev/slipway/internal/plan"
)

// pushAll runs the push steps of every node not failed yet, before anything of the cluster
// changes: a push that fails stops its node, and with every push failing the cluster is left
// exactly as it was.
func (e *Engine) pushAll(ctx context.Context, p *plan.Plan, steps *plan.Steps, failed *failures) {
	var pushes []plan.Step
	for _, ns := range steps.Nodes {
		for _, st := range ns.Steps {
			if st.Kind == plan.StepPush && failed.get(st.Node) == nil {
				pushes = append(pushes, st)
			}
		}
	}
	parallel.ForEach(max(e.o.NewNodes, e.o.Parallelism), pushes, func(st plan.Step) {
		if err := e.push(ctx, st, planDigest(p, st.ImageName)); err != nil {
			failed.add(st.Node, err)
			e.emit(event.Event{Node: st.Node, Phase: event.PhaseFailed, Message: err.Error()})
		}
	})
}

// push pushes the image of a push step and checks the registry stored want, the digest the
// plan's objects name.
func (e *Engine) push(ctx context.Context, st plan.Step, want string) error {
	e.mu.Lock()
	img, ok := e.images[st.ImageName]
	e.mu.Unlock()
	if !ok {
		return fmt.Errorf("image %s: not built in this run", st.ImageName)
	}
	e.emit(event.Event{Node: st.Node, Phase: event.PhasePush, Message: "pushing " + st.Image})
	d, err := e.o.Publisher.Publish(ctx, st.Image, img, func(done, total int64) {
		e.emit(event.Event{Node: st.Node, Phase: event.PhasePush, Image: &event.Image{Name: st.ImageName, Kind: event.ImageProgress, Ref: st.Image, Done: done, Total: total}})
	})
	if err != nil {
		return fmt.Errorf("image %s: push %s: %w", st.ImageName, st.Image, err)
	}
	if d.String() != want {
		return fmt.Errorf("image %s: the registry returned %s for %s, the plan expected %s", st.ImageName, d, st.Image, want)
	}
	e.emit(event.Event{Node: st.Node, Phase: event.PhasePush, Message: "pushed " + d.String()})
	return nil
}

// planDigest is the digest the plan expects of image name.
func planDigest(p *plan.Plan, name string) string {
	for _, im := range p.Images {
		if im.Name == name {
			return im.Digest
		}
	}
	return ""
}
