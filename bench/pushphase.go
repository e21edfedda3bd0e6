package main

// The first apply's push phase (issue 17, item 3), measured apart from the rollout and set
// beside crane pushing the same images with the same parallelism, in the same run.
//
// slipway's phases come from its own events (`apply -o json`, one JSON line per event with
// its time): the push phase runs from its first push event to its last one. crane is
// go-containerregistry's crane package (the module slipway already builds with), pushing the
// images of `slipway images build --out` (the same manifests and blobs, so the same digests)
// into repositories of their own, so that every blob is new to the registry for both.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/crane"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"

	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/image"
)

// Phases splits slipway's first apply by its events.
type Phases struct {
	// PlanSeconds runs from the command's start to its first push event.
	PlanSeconds float64 `json:"planSeconds"`
	// PushSeconds runs from the first push event to the last.
	PushSeconds float64 `json:"pushSeconds"`
	// AfterPushSeconds runs from the last push event to the command's end: objects and rollouts.
	AfterPushSeconds float64 `json:"afterPushSeconds"`
	Pushed           int     `json:"pushed"`
}

// phasesOf reads the JSON event lines of an apply that started at t0 and took wall.
func phasesOf(r io.Reader, t0 time.Time, wall time.Duration) (Phases, error) {
	var first, last time.Time
	var ph Phases
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var e event.Event
		if err := json.Unmarshal(line, &e); err != nil || e.Phase != event.PhasePush {
			continue
		}
		if first.IsZero() {
			first = e.Time
		}
		last = e.Time
		if strings.HasPrefix(e.Message, "pushed ") {
			ph.Pushed++
		}
	}
	if err := sc.Err(); err != nil {
		return ph, err
	}
	if first.IsZero() {
		return ph, fmt.Errorf("no push event")
	}
	end := t0.Add(wall)
	ph.PlanSeconds = first.Sub(t0).Seconds()
	ph.PushSeconds = last.Sub(first).Seconds()
	ph.AfterPushSeconds = end.Sub(last).Seconds()
	return ph, nil
}

// CranePush is crane's push of the same images.
type CranePush struct {
	Images      int     `json:"images"`
	Parallelism int     `json:"parallelism"`
	WallSeconds float64 `json:"wallSeconds"`
	Error       string  `json:"error,omitempty"`
}

// buildLayout writes the group's images into an OCI layout with slipway, untimed.
func (b *bench) buildLayout(ctx context.Context, dir string) error {
	cmd := exec.CommandContext(ctx, b.slipway, "images", "build", "--out", dir)
	cmd.Dir = b.work
	cmd.Env = b.toolEnv
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("slipway images build: %v\n%s", err, tail(string(out), 20))
	}
	return nil
}

// cranePush pushes every image of the layout at dir to <registry>/<repoPrefix>/<image>,
// parallelism at a time, with crane, and times it.
func cranePush(ctx context.Context, dir, registry, repoPrefix string, parallelism int) CranePush {
	res := CranePush{Parallelism: parallelism}
	p, err := layout.FromPath(dir)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	idx, err := p.ImageIndex()
	if err != nil {
		res.Error = err.Error()
		return res
	}
	im, err := idx.IndexManifest()
	if err != nil {
		res.Error = err.Error()
		return res
	}
	type job struct{ ref, digest string }
	var jobs []job
	for _, d := range im.Manifests {
		ref := d.Annotations[image.RefNameAnnotation]
		// <registry>/<ns>/<image>:<tag> → <registry>/<repoPrefix>/<image>:<tag>
		base := ref[strings.LastIndex(ref, "/")+1:]
		jobs = append(jobs, job{ref: registry + "/" + repoPrefix + "/" + base, digest: d.Digest.String()})
	}
	res.Images = len(jobs)
	sem := make(chan struct{}, max(parallelism, 1))
	var mu sync.Mutex
	var errs []string
	var wg sync.WaitGroup
	t0 := time.Now()
	for _, j := range jobs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			err := pushOne(ctx, p, j.ref, j.digest)
			if err != nil {
				mu.Lock()
				errs = append(errs, err.Error())
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	res.WallSeconds = time.Since(t0).Seconds()
	if len(errs) > 0 {
		res.Error = fmt.Sprintf("%d of %d failed, first: %s", len(errs), len(jobs), errs[0])
	}
	return res
}

func pushOne(ctx context.Context, p layout.Path, ref, digest string) error {
	h, err := v1.NewHash(digest)
	if err != nil {
		return err
	}
	img, err := p.Image(h)
	if err != nil {
		return fmt.Errorf("layout image %s: %w", digest, err)
	}
	if err := crane.Push(img, ref, crane.WithContext(ctx), crane.Insecure); err != nil {
		return fmt.Errorf("crane push %s: %w", ref, err)
	}
	return nil
}

// cranePhase runs crane's push of the group's images before slipway's first apply, and
// returns what it measured; nil when it could not run (noted).
func (b *bench) cranePhase(ctx context.Context, n, parallelism int) *CranePush {
	dir := filepath.Join(b.work, "layout")
	if err := b.buildLayout(ctx, dir); err != nil {
		b.note(fmt.Sprintf("crane push of %d nodes left out: %v", n, err))
		return nil
	}
	cp := cranePush(ctx, dir, b.env.Registry, fmt.Sprintf("bench-crane-%s-%d", randHex(), n), parallelism)
	log.Printf("crane    push of %d images, %d at a time  %8.2fs %s", cp.Images, cp.Parallelism, cp.WallSeconds, cp.Error)
	_ = os.RemoveAll(dir)
	return &cp
}

// defaultParallelism is how many images slipway pushes at a time when --parallelism is not
// given (internal/cli's defaultPushes); with it, --parallelism.
const defaultParallelism = 32
