package engine

import (
	"context"
	"fmt"
	"sync"

	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/parallel"
	"slipway.dev/slipway/internal/plan"
)

// pushRun pushes the images of every node in the background, a node's own pushes before
// anything of that node changes in the cluster (SPEC §6 step 1): a node waits for its pushes
// (wait), not for every node's. The first apply of 200 nodes spent 4.2 s pushing before its
// first object, while the cluster, whose claims bind one at a time, sat idle (issue 17).
type pushRun struct {
	nodes map[string]*nodePushes
	// first is closed at the first push that succeeds, or once every push is done: with
	// every push failing, the cluster is left exactly as it was.
	first chan struct{}
	all   chan struct{} // closed once every push is done
	once  sync.Once
	mu    sync.Mutex // guards each nodePushes.left
}

// nodePushes are one node's pushes: done is closed once none is left, failed or not.
type nodePushes struct {
	left int
	done chan struct{}
}

// startPushes starts the push steps of every node not failed yet, Pushes at a time in the
// group file's order; a push that fails fails its node.
func (e *Engine) startPushes(ctx context.Context, p *plan.Plan, steps *plan.Steps, failed *failures) *pushRun {
	pr := &pushRun{nodes: map[string]*nodePushes{}, first: make(chan struct{}), all: make(chan struct{})}
	var pushes []plan.Step
	for _, ns := range steps.Nodes {
		for _, st := range ns.Steps {
			if st.Kind == plan.StepPush && failed.get(st.Node) == nil {
				pushes = append(pushes, st)
				if pr.nodes[st.Node] == nil {
					pr.nodes[st.Node] = &nodePushes{done: make(chan struct{})}
				}
				pr.nodes[st.Node].left++
			}
		}
	}
	go func() {
		defer close(pr.all)
		defer pr.once.Do(func() { close(pr.first) })
		parallel.ForEach(e.pushes(), pushes, func(st plan.Step) {
			err := e.push(ctx, st, planDigest(p, st.ImageName))
			if err != nil {
				failed.add(st.Node, err)
				e.emit(event.Event{Node: st.Node, Phase: event.PhaseFailed, Message: err.Error()})
			} else {
				pr.once.Do(func() { close(pr.first) })
			}
			np := pr.nodes[st.Node]
			pr.mu.Lock()
			defer pr.mu.Unlock()
			if np.left--; np.left == 0 {
				close(np.done)
			}
		})
	}()
	return pr
}

// pushes is how many images go at a time.
func (e *Engine) pushes() int {
	if e.o.Pushes > 0 {
		return e.o.Pushes
	}
	return max(e.o.NewNodes, e.o.Parallelism)
}

// wait returns once node's pushes are done, or ctx ends.
func (pr *pushRun) wait(ctx context.Context, node string) {
	if np := pr.nodes[node]; np != nil {
		select {
		case <-np.done:
		case <-ctx.Done():
		}
	}
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
