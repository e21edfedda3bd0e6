package engine

import (
	"context"
	"errors"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"slipway.dev/slipway/internal/image"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

// The state, the images and the live objects are read beside the preflight checks
// (readInputs); a preflight that fails is still what the plan says, whatever the others found,
// and the plan writes nothing. Cases: another group's namespace, with images that build and
// with images that fail; a namespace of no group, whose image failure is then the error.
func TestPreflightErrorWinsOverInputs(t *testing.T) {
	for _, tc := range []struct {
		name       string
		owner      string
		badImage   bool
		preflight  bool
		wantSubstr string
	}{
		{"another group's namespace", "other", false, true, "belongs to group other"},
		{"another group's namespace, an image failing", "other", true, true, "belongs to group other"},
		{"an image failing alone", "", true, false, "no such rootfs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := benchGroup(t, 3)
			var jobs []image.Job
			for _, n := range g.Nodes {
				src := image.Source{Rootfs: "one"}
				if tc.badImage && n.Name == "n001" {
					src.Rootfs = "missing"
				}
				jobs = append(jobs, image.Job{Name: n.Name, Repository: "reg/scale/" + n.Name, Source: src})
			}
			f := newFakeCluster()
			ns := &unstructured.Unstructured{}
			ns.SetKind("Namespace")
			ns.SetName("scale")
			if tc.owner != "" {
				ns.SetLabels(map[string]string{spec.LabelGroup: tc.owner})
			}
			f.Objects[plan.Key{Kind: "Namespace", Name: "scale"}] = ns
			bl := &failingBuilder{fakeBuilder: fakeBuilder{imgs: map[string]v1.Image{}}, missing: "missing"}
			store := &memStore{Doc: &state.Document{Group: "scale"}}
			e := New(Options{Kube: f, Builder: bl, Publisher: &fakeRegistry{tags: map[string]v1.Hash{}}, Parallelism: 10})
			_, err := e.Plan(context.Background(), Target{Group: g, Namespace: "scale", Jobs: jobs, Store: store})
			if err == nil || !strings.Contains(err.Error(), tc.wantSubstr) {
				t.Fatalf("Plan: %v, want an error with %q", err, tc.wantSubstr)
			}
			var pe *PreflightError
			if got := errors.As(err, &pe); got != tc.preflight {
				t.Errorf("a PreflightError: %v, want %v (%v)", got, tc.preflight, err)
			}
			if store.Writes != 0 || len(f.Calls()) != 0 {
				t.Errorf("the plan wrote: %d state writes, cluster calls %q", store.Writes, f.Calls())
			}
		})
	}
}

// failingBuilder is fakeBuilder, but the rootfs named missing does not build.
type failingBuilder struct {
	fakeBuilder
	missing string
}

func (b *failingBuilder) Build(ctx context.Context, src image.Source) (v1.Image, []string, error) {
	if src.Rootfs == b.missing {
		return nil, nil, errors.New("rootfs " + src.Rootfs + ": no such rootfs")
	}
	return b.fakeBuilder.Build(ctx, src)
}
