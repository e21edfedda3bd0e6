package engine

import (
	"context"
	"errors"
	"fmt"

	"slipway.dev/slipway/internal/parallel"
	"slipway.dev/slipway/internal/plan"
)

// Images is render's side of the images a plan pins (SPEC §9): per image name, the digest its
// objects name, resolved as Plan resolves them, so that a render and an apply of the same
// input pin the same bytes. An image the registry lacks is pushed first with push (by the push
// step's executor, which checks the registry stored the planned digest); without push, every
// such image is an error naming it.
func (e *Engine) Images(ctx context.Context, t Target, push bool) (map[string]string, error) {
	images, err := e.resolveImages(ctx, t)
	if err != nil {
		return nil, err
	}
	var missing []plan.Image
	for _, im := range images {
		if im.Push {
			missing = append(missing, im)
		}
	}
	errs := make([]error, len(missing))
	if push {
		parallel.ForEach(e.o.Parallelism, parallel.Indexes(len(missing)), func(i int) {
			im := missing[i]
			errs[i] = e.push(ctx, plan.Step{Kind: plan.StepPush, Node: im.Node, ImageName: im.Name, Image: im.Tag}, im.Digest)
		})
	} else {
		for i, im := range missing {
			errs[i] = fmt.Errorf("image %s: %s is not in the registry: push it (render --push, or slipway images push)", im.Name, im.Tag)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	out := make(map[string]string, len(images))
	for _, im := range images {
		out[im.Name] = im.Digest
	}
	return out, nil
}
