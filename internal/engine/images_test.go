package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"slipway.dev/slipway/internal/image"
	"slipway.dev/slipway/internal/render"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

// fakeBuilder builds one fixed random image per source rootfs: a build is reproducible.
type fakeBuilder struct {
	mu   sync.Mutex
	imgs map[string]v1.Image
}

func (b *fakeBuilder) Build(_ context.Context, src image.Source) (v1.Image, []string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.imgs[src.Rootfs] == nil {
		img, err := random.Image(64, 1)
		if err == nil && src.User != "" {
			img, err = mutate.Config(img, v1.Config{User: src.User})
		}
		if err != nil {
			return nil, nil, err
		}
		b.imgs[src.Rootfs] = img
	}
	return b.imgs[src.Rootfs], nil, nil
}

func (b *fakeBuilder) Tag(img v1.Image) (string, error) {
	d, err := img.Digest()
	return "c-" + d.Hex[:12], err
}

// fakeRegistry holds tags in memory and records what was published.
type fakeRegistry struct {
	mu        sync.Mutex
	tags      map[string]v1.Hash
	published []string
}

func (r *fakeRegistry) Lookup(_ context.Context, ref string) (v1.Hash, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	h, ok := r.tags[ref]
	return h, ok, nil
}

func (r *fakeRegistry) Publish(_ context.Context, ref string, img v1.Image, _ func(done, total int64)) (name.Digest, error) {
	h, err := img.Digest()
	if err != nil {
		return name.Digest{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tags[ref] = h
	r.published = append(r.published, ref)
	repo, _, _ := strings.Cut(ref, ":")
	return name.NewDigest(repo+"@"+h.String(), name.WeakValidation)
}

// pushed puts the image of job into the registry, as an earlier push would have.
func (r *fakeRegistry) pushed(t testing.TB, b *fakeBuilder, job image.Job) {
	t.Helper()
	img, ref, _, err := image.BuildTagged(context.Background(), b, job)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := img.Digest()
	r.tags[ref] = h
}

// TestRenderPinsWhatApplyPins: render's images (Images) and machine IDs (RecordMachineIDs) are
// the ones a plan made afterwards pins, whether the registry had the images, render pushed
// them, and whether a node's ID comes from the state, its running Deployment or is new.
func TestRenderPinsWhatApplyPins(t *testing.T) {
	jobs := []image.Job{
		{Name: "web", Repository: "reg/demo/web", Source: image.Source{Rootfs: "web"}},
		{Name: "web-sso", Repository: "reg/demo/web-sso", Source: image.Source{Rootfs: "sso", User: "65532"}},
		{Name: "db", Repository: "reg/demo/db", Source: image.Source{Rootfs: "db"}},
		{Name: "cache", Repository: "reg/demo/cache", Source: image.Source{Rootfs: "cache"}},
	}
	for _, tc := range []struct {
		name       string
		inRegistry []string // images pushed before the render
		push       bool
		wantErr    []string // each missing image named
	}{
		{name: "every image in the registry", inRegistry: []string{"web", "web-sso", "db", "cache"}},
		{name: "render --push pushes the missing ones", inRegistry: []string{"web", "cache"}, push: true},
		{name: "render without --push names each missing image", inRegistry: []string{"web", "cache"},
			wantErr: []string{"image web-sso: reg/demo/web-sso:c-", "image db: reg/demo/db:c-", "is not in the registry"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			b, reg := &fakeBuilder{imgs: map[string]v1.Image{}}, &fakeRegistry{tags: map[string]v1.Hash{}}
			for _, j := range jobs {
				if slices.Contains(tc.inRegistry, j.Name) {
					reg.pushed(t, b, j)
				}
			}
			f := newFakeCluster()
			// db runs already with an ID the state lost; web's is in the state; sso is new.
			running := testDeployment("db", "reg/demo/db@sha256:old", 1)
			setMachineID(t, running, "running-id")
			if _, err := f.Apply(ctx, running, applyOptions()); err != nil {
				t.Fatal(err)
			}
			store := &memStore{Doc: &state.Document{Group: "demo", Nodes: map[string]*state.NodeState{"web": {MachineID: "state-id"}}}}
			grp := &spec.Group{Name: "demo", Nodes: []*spec.Node{
				{Name: "web", Roles: []*spec.Role{{Name: "sso", Replicas: 1, Service: &spec.Service{}}}},
				{Name: "db"}, {Name: "cache"},
			}}
			tgt := Target{Group: grp, Namespace: "demo", Jobs: jobs, Store: store}
			o := Options{Kube: f, Builder: b, Publisher: reg}

			rendered, err := New(o).Images(ctx, tgt, tc.push)
			if tc.wantErr != nil {
				for _, w := range tc.wantErr {
					if err == nil || !strings.Contains(err.Error(), w) {
						t.Errorf("error %v, want it to say %q", err, w)
					}
				}
				if len(reg.published) > 0 {
					t.Errorf("render without --push published %v", reg.published)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			ids, _, err := New(o).RecordMachineIDs(ctx, tgt)
			if err != nil {
				t.Fatal(err)
			}
			if ids["web"] != "state-id" || ids["db"] != "running-id" || ids["cache"] == "" {
				t.Errorf("render's machine IDs %v: want web's from the state, db's from its Deployment, cache a new one", ids)
			}

			p, err := New(o).Plan(ctx, tgt)
			if err != nil {
				t.Fatal(err)
			}
			planned := map[string]string{}
			for _, im := range p.Images {
				planned[im.Name] = im.Digest
				if im.Push {
					t.Errorf("image %s: the plan after render pushes it again", im.Name)
				}
			}
			if d := cmp.Diff(planned, rendered); d != "" {
				t.Errorf("render's digests differ from the plan's (-plan +render):\n%s", d)
			}
			if d := cmp.Diff(ids, p.MachineIDs); d != "" {
				t.Errorf("render's machine IDs differ from the plan's (-render +plan):\n%s", d)
			}
			if want := slices.Sorted(maps.Keys(rendered)); len(want) != len(jobs) {
				t.Errorf("render pinned %v, want every image of the group", want)
			}
		})
	}
}

// setMachineID gives a Deployment's node container the machine ID env a render gives it.
func setMachineID(t *testing.T, d *unstructured.Unstructured, id string) {
	t.Helper()
	cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	c := cs[0].(map[string]any)
	c["env"] = []any{map[string]any{"name": render.EnvMachineID, "value": id}}
	if err := unstructured.SetNestedSlice(d.Object, cs, "spec", "template", "spec", "containers"); err != nil {
		t.Fatal(fmt.Errorf("deployment %s: %w", d.GetName(), err))
	}
}
