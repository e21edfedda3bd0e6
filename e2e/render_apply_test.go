package e2e

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/yaml"
)

// pinned is what a Deployment pins: per container, its image and its machine ID value.
type pinned map[string]string

func pinsOf(d *appsv1.Deployment) pinned {
	out := pinned{}
	for _, c := range d.Spec.Template.Spec.Containers {
		out[c.Name+" image"] = c.Image
		for _, e := range c.Env {
			if e.Name == "container_uuid" && e.Value != "" {
				out[c.Name+" machine ID"] = e.Value
			}
		}
	}
	return out
}

// renderedPins reads the Deployments of a rendered stream.
func renderedPins(t *testing.T, stream string) map[string]pinned {
	t.Helper()
	out := map[string]pinned{}
	dec := yaml.NewYAMLOrJSONDecoder(strings.NewReader(stream), 4096)
	for {
		var m map[string]any
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("rendered stream: %v", err)
		}
		if m["kind"] != "Deployment" {
			continue
		}
		var d appsv1.Deployment
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &d); err != nil {
			t.Fatal(err)
		}
		out[d.Name] = pinsOf(&d)
	}
	return out
}

// livePins reads the group's Deployments from the cluster.
func livePins(t *testing.T, g *Group) map[string]pinned {
	t.Helper()
	ds, err := g.Kube.Clientset.AppsV1().Deployments(g.Name).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]pinned{}
	for i := range ds.Items {
		out[ds.Items[i].Name] = pinsOf(&ds.Items[i])
	}
	return out
}

// render and apply resolve images and machine IDs with one implementation (the engine's): the
// Deployments apply makes pin exactly the digests and machine IDs render printed, and a render
// whose state was lost pins what the nodes run (their live Deployments' machine IDs).
func TestRenderAndApplyPinTheSame(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "pins", helloGroup, "web", "db")
	stateA := "file://" + filepath.Join(g.Dir, "a.json")
	rendered := renderedPins(t, g.MustRun(0, "--state", stateA, "render", "--push").Stdout)
	if len(rendered) != 3 { // web, web-worker, db
		t.Fatalf("render printed the Deployments %v, want web, web-worker and db", rendered)
	}
	g.MustRun(0, "--state", stateA, "apply", "--yes")
	if d := cmp.Diff(rendered, livePins(t, g)); d != "" {
		t.Errorf("apply pinned other images or machine IDs than render printed (-render +apply):\n%s", d)
	}
	stateB := "file://" + filepath.Join(g.Dir, "b.json")
	lost := renderedPins(t, g.MustRun(0, "--state", stateB, "render").Stdout)
	if d := cmp.Diff(livePins(t, g), lost); d != "" {
		t.Errorf("a render without the state pins other than what runs (-running +render):\n%s", d)
	}
}
