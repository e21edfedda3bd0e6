package image

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/parallel"
)

// Job is one image to build and push.
type Job struct {
	// Name names the image in events and errors: the node, or `<node>-<role>`.
	Name string
	// Repository is `<registry>/<namespace>/<name>` (see Repository).
	Repository string
	Source     Source
}

// Result is where a job's image is.
type Result struct {
	Name string
	// Tag is the reference pushed or found, `<repository>:<tag>`.
	Tag string
	// Digest is `<repository>@sha256:…`, what a Deployment names.
	Digest name.Digest
	// Pushed is false when the registry had the tag already and nothing was uploaded.
	Pushed bool
}

// BuildTagged builds the image of job and returns it with its content-tag reference
// `<repository>:<tag>` and the build's warnings (files skipped). Errors name the image.
func BuildTagged(ctx context.Context, b Builder, job Job) (img v1.Image, ref string, warnings []string, err error) {
	img, warnings, err = b.Build(ctx, job.Source)
	if err != nil {
		return nil, "", warnings, fmt.Errorf("image %s: %w", job.Name, err)
	}
	tag, err := b.Tag(img)
	if err != nil {
		return nil, "", warnings, fmt.Errorf("image %s: %w", job.Name, err)
	}
	return img, job.Repository + ":" + tag, warnings, nil
}

// Push builds the image of job, asks the registry for its tag and uploads it only when the
// tag is not there. emit may be nil.
func Push(ctx context.Context, b Builder, p Publisher, job Job, emit func(event.Image)) (Result, error) {
	if emit == nil {
		emit = func(event.Image) {}
	}
	img, ref, warnings, err := BuildTagged(ctx, b, job)
	for _, w := range warnings {
		emit(event.Image{Name: job.Name, Kind: event.ImageWarning, Message: w})
	}
	if err != nil {
		return Result{}, err
	}
	emit(event.Image{Name: job.Name, Kind: event.ImageBuilt, Ref: ref})
	digestRef := func(d string) (name.Digest, error) {
		return name.NewDigest(job.Repository+"@"+d, name.WeakValidation)
	}
	if h, found, err := p.Lookup(ctx, ref); err != nil {
		return Result{}, err
	} else if found {
		d, err := digestRef(h.String())
		if err != nil {
			return Result{}, fmt.Errorf("image %s: %w", job.Name, err)
		}
		emit(event.Image{Name: job.Name, Kind: event.ImageExists, Ref: ref, Digest: d.String()})
		return Result{Name: job.Name, Tag: ref, Digest: d}, nil
	}
	d, err := p.Publish(ctx, ref, img, func(done, total int64) {
		emit(event.Image{Name: job.Name, Kind: event.ImageProgress, Ref: ref, Done: done, Total: total})
	})
	if err != nil {
		return Result{}, err
	}
	emit(event.Image{Name: job.Name, Kind: event.ImagePushed, Ref: ref, Digest: d.String()})
	return Result{Name: job.Name, Tag: ref, Digest: d, Pushed: true}, nil
}

// PushAll runs Push for every job, parallelism at a time, and returns the results in the
// order of jobs. The first failure cancels the jobs still running and is returned, joined with
// any others that failed meanwhile. emit must be safe for concurrent use.
func PushAll(ctx context.Context, b Builder, p Publisher, jobs []Job, parallelism int, emit func(event.Image)) ([]Result, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make([]Result, len(jobs))
	errs := make([]error, len(jobs))
	parallel.ForEach(parallelism, parallel.Indexes(len(jobs)), func(i int) {
		if ctx.Err() != nil {
			return // another failed, or the caller's context ended: not started
		}
		results[i], errs[i] = Push(ctx, b, p, jobs[i], emit)
		if errs[i] != nil {
			cancel()
		}
	})
	var failed, cancelled []error
	for _, err := range errs {
		switch {
		case err == nil:
		case errors.Is(err, context.Canceled):
			cancelled = append(cancelled, err)
		default:
			failed = append(failed, err)
		}
	}
	// A job cancelled because another failed adds nothing to that failure.
	if len(failed) > 0 {
		return results, errors.Join(failed...)
	}
	if len(cancelled) > 0 {
		return results, errors.Join(cancelled...)
	}
	for i := range jobs {
		if results[i].Tag == "" { // the caller's context ended before the job started
			return results, fmt.Errorf("images: %w", ctx.Err())
		}
	}
	return results, nil
}
