package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// savedPlan is the part of a `plan -out` file this test reads.
type savedPlan struct {
	Images []struct {
		Name   string `json:"name"`
		Digest string `json:"digest"`
	} `json:"images"`
	MachineIDs map[string]string `json:"machineIDs"`
}

func readSavedPlan(t *testing.T, path string) savedPlan {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var p savedPlan
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return p
}

// TestSavedPlan: `apply FILE` applies exactly the saved plan, and refuses it when the state or
// a planned object moved since.
func TestSavedPlan(t *testing.T) {
	t.Parallel()
	t.Run("applies exactly", func(t *testing.T) {
		t.Parallel()
		g := NewGroup(t, "saved", soloGroup, "solo")
		out := filepath.Join(g.Dir, "p.json")
		g.MustRun(0, "plan", "-out", out)
		sp := readSavedPlan(t, out)
		g.MustRun(0, "apply", out)
		st := g.State().State
		if diff := cmp.Diff(sp.MachineIDs["solo"], st.Nodes["solo"].MachineID); diff != "" {
			t.Errorf("machine ID: the state's differs from the saved plan's (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(sp.MachineIDs["solo"], machineIDOf(t, g, "solo")); diff != "" {
			t.Errorf("machine ID: the Deployment's differs from the saved plan's (-want +got):\n%s", diff)
		}
		dep, err := g.Kube.Clientset.AppsV1().Deployments(g.Name).Get(context.Background(), "solo", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(sp.Images) != 1 {
			t.Fatalf("saved plan images: %+v", sp.Images)
		}
		if diff := cmp.Diff(sp.Images[0].Digest, dep.Spec.Template.Spec.Containers[0].Image); diff != "" {
			t.Errorf("image (-want +got):\n%s", diff)
		}
		g.MustRun(0, "plan", "--detailed-exitcode")
		// Applied once, the saved plan is stale.
		r := g.MustRun(1, "apply", out)
		if !strings.Contains(r.Stderr, "plan again") {
			t.Errorf("second apply of a saved plan: want it refused with `plan again`, got %s", r)
		}
	})
	t.Run("state moved", func(t *testing.T) {
		t.Parallel()
		g := NewGroup(t, "stalest", soloGroup, "solo")
		g.MustRun(0, "apply", "--yes")
		g.WriteFile("nodes/solo/rootfs/etc/motd", "v2\n")
		out := filepath.Join(g.Dir, "p.json")
		g.MustRun(0, "plan", "-out", out)
		g.WriteFile("nodes/solo/rootfs/etc/motd", "v3\n")
		g.MustRun(0, "apply", "--yes")
		before := g.PodUIDs()
		g.WriteFile("nodes/solo/rootfs/etc/motd", "v2\n")
		r := g.MustRun(1, "apply", out)
		if !strings.Contains(r.Stderr, "plan again") || !strings.Contains(r.Stderr, "serial") {
			t.Errorf("apply of a plan made before another apply: want it refused naming the serial and `plan again`, got %s", r)
		}
		if diff := cmp.Diff(before, g.PodUIDs()); diff != "" {
			t.Errorf("pods after a refused plan (-want +got):\n%s", diff)
		}
	})
	t.Run("live object moved", func(t *testing.T) {
		t.Parallel()
		g := NewGroup(t, "stalelive", soloGroup, "solo")
		g.MustRun(0, "apply", "--yes")
		g.WriteFile("nodes/solo/rootfs/etc/motd", "v2\n")
		out := filepath.Join(g.Dir, "p.json")
		g.MustRun(0, "plan", "-out", out)
		patch := []byte(`{"metadata":{"annotations":{"example.com/touched":"yes"}}}`)
		if _, err := g.Kube.Clientset.AppsV1().Deployments(g.Name).Patch(context.Background(), "solo", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		before := g.PodUIDs()
		r := g.MustRun(1, "apply", out)
		if !strings.Contains(r.Stderr, "plan again") || !strings.Contains(r.Stderr, "Deployment "+g.Name+"/solo") {
			t.Errorf("apply of a plan whose Deployment changed: want it refused naming it and `plan again`, got %s", r)
		}
		if diff := cmp.Diff(before, g.PodUIDs()); diff != "" {
			t.Errorf("pods after a refused plan (-want +got):\n%s", diff)
		}
		if tags := g.RepoTags("solo"); len(tags) != 1 {
			t.Errorf("registry tags of solo after a refused plan: want only the first image, got %v", tags)
		}
	})
}
