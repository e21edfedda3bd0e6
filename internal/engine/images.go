package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"slipway.dev/slipway/internal/image"
	"slipway.dev/slipway/internal/parallel"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
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

// serviceUser fails when image name is a service role's and its config would run the service
// as root, which its container, locked to runAsNonRoot, refuses (issue 43): the loader
// refuses that for a rootfs or an archive already, a base image's config is known only now,
// once pulled.
func serviceUser(g *spec.Group, name string, img v1.Image) error {
	for _, n := range g.Nodes {
		for _, r := range n.Roles {
			if r.Service == nil || spec.RoleObjectName(n.Name, r.Name) != name {
				continue
			}
			user, err := image.User(img)
			if err != nil {
				return fmt.Errorf("role %s: service image %s: %w", r.Name, name, err)
			}
			if problem := spec.RootUserProblem(user); problem != "" {
				return fmt.Errorf("role %s: service image %s: the service would run as root, which its locked-down container refuses (runAsNonRoot): %s; set nodes.%s.roles.%s.service.image.user to a number other than 0 (e.g. `user: 65532`)",
					r.Name, name, problem, n.Name, r.Name)
			}
			return nil
		}
	}
	return nil
}

// stateLabels keeps the label dev.slipway.state.version of the node images built in a plan:
// the migrate lane's versions of nodes whose file sets none (migrate.Versions).
type stateLabels struct {
	mu sync.Mutex
	m  map[string]string // node → the label's value
}

func (l *stateLabels) set(node, v string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[string]string{}
	}
	l.m[node] = v
}

// get is a copy of the labels read so far.
func (l *stateLabels) get() map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.m)
}
