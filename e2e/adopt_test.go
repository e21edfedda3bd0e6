package e2e

// Issue 46, upgrade path: a per-app target's state and objects as the release before
// deployment keys left them (key <group>-front) are adopted by this release (<group>.front).

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	mdns "github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"slipway.dev/slipway/internal/devcluster/devtest"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

// TestAdoptEarlierRelease: target front is applied, then put back as the earlier release kept
// it: its state moved under the old key <group>-front by the state backend itself (file and
// kubernetes://), its namespace, objects and pod templates labelled <group>-front. With the
// old behaviour (the code before this change) the plan refused the namespace as another
// deployment's ("namespace … belongs to group <group>-front"). Now plan says it adopts
// the old key and changes nothing; apply moves the state and relabels every object, deleting
// none (the claims keep their UIDs); destroy then leaves nothing: no namespace, no state under
// either key. Web publishes www.<zone> on the dev environment's Knot, its owner TXT put back
// as the earlier release wrote it (owner <group>-front/…): plan says the record is adopted,
// apply rewrites the owner to the new key and keeps the record, destroy retires it.
func TestAdoptEarlierRelease(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"file", "kubernetes"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			g := NewGroup(t, "adopt"+backend[:1], targetsGroup, "web", "cache", "db")
			ns, key, old := g.Name+"-front", g.Name+".front", g.Name+"-front"
			g.dropNamespaces(ns)
			_, www := publishedTarget(g)
			url := func(k string) string { return "file://" + filepath.Join(g.Dir, state.DefaultPath(k)) }
			if backend == "kubernetes" {
				g.WithEnv("SLIPWAY_STATE=kubernetes://" + ns)
				url = func(string) string { return "kubernetes://" + ns }
			}
			g.MustRun(0, "apply", "--yes", "--target", "front")
			ctx := context.Background()
			open := func(k string) state.Backend {
				b, err := state.Open(ctx, url(k), k, g.Kube)
				if err != nil {
					t.Fatal(err)
				}
				return b
			}
			g.asEarlierRelease(ns, open(key), open(old), key, old)
			claims := g.claimUIDs(ns)
			addrs := g.lookup(www, mdns.TypeA)
			if len(addrs) != 1 {
				t.Fatalf("%s after the first apply: A %q; want its address", www, addrs)
			}
			oldOwner, newOwner := g.ownerText(old, ns, "web"), g.ownerText(key, ns, "web")
			g.setOwnerTXT(www, oldOwner)

			// Status before the adoption reports the deployment as it runs, under the old key.
			r := g.MustRun(0, "status", "--target", "front", "-o", "json")
			var st struct {
				AdoptsFrom string `json:"adoptsFrom"`
				Nodes      []struct {
					Node, Phase, DNS string
					InState          bool `json:"inState"`
				} `json:"nodes"`
			}
			if err := json.Unmarshal([]byte(r.Stdout), &st); err != nil {
				t.Fatalf("status -o json: %v\n%s", err, r)
			}
			if st.AdoptsFrom != old || len(st.Nodes) != 2 {
				t.Errorf("status before the adoption: adoptsFrom %q, %d nodes; want %q and web, cache:\n%s", st.AdoptsFrom, len(st.Nodes), old, r.Stdout)
			}
			for _, n := range st.Nodes {
				if !n.InState || n.Phase != "ready" || (n.Node == "web" && n.DNS != "agrees") {
					t.Errorf("status before the adoption: node %+v; want it in the state, Ready, its DNS (web) agreeing", n)
				}
			}

			r = g.MustRun(0, "plan", "--target", "front")
			if want := "under the key " + old + ", which is now " + key; !strings.Contains(r.Stderr, "adopts the state of an earlier release") || !strings.Contains(r.Stderr, want) {
				t.Errorf("plan: want the adoption said (%q):\n%s", want, r)
			}
			if !strings.Contains(r.Stdout, "0 to create, 2 to update, 0 to replace, 0 to delete") {
				t.Errorf("plan: want the two Deployments updated (their pod template's label) and nothing made, replaced or deleted:\n%s", r.Stdout)
			}
			if want := "adopted: owner " + old + "/" + ns + "@"; !strings.Contains(r.Stdout, want) || strings.Contains(r.Stdout+r.Stderr, "conflict") {
				t.Errorf("plan: want %s adopted (%q), no conflict:\n%s", www, want, r)
			}
			if d, _ := open(old).Read(ctx); d == nil {
				t.Fatal("plan moved the old state")
			}

			g.MustRun(0, "apply", "--yes", "--target", "front")
			if d, err := open(old).Read(ctx); d != nil || err != nil {
				t.Errorf("old state after apply: %v, %v; want none", d, err)
			}
			if d, err := open(key).Read(ctx); d == nil || err != nil || len(d.Nodes) != 2 {
				t.Fatalf("state %s after apply: %+v, %v; want the adopted one, nodes cache and web", key, d, err)
			}
			if left := g.labelled(ns, old); len(left) != 0 {
				t.Errorf("objects still labelled %s after apply: %q", old, left)
			}
			if len(g.labelled(ns, key)) == 0 {
				t.Errorf("no object labelled %s after apply", key)
			}
			nsObj, err := g.Kube.Clientset.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			if err != nil || nsObj.Labels[spec.LabelGroup] != key {
				t.Errorf("namespace %s: %v, labels %v; want %s=%s", ns, err, nsObj.Labels, spec.LabelGroup, key)
			}
			if d := cmp.Diff(claims, g.claimUIDs(ns)); d != "" {
				t.Errorf("claims re-made by the adoption (-before +after):\n%s", d)
			}
			if got := g.lookup("_slipway."+www, mdns.TypeTXT); len(got) != 1 || !strings.HasSuffix(got[0], fmt.Sprintf("%q", newOwner)) {
				t.Errorf("owner TXT of %s after apply: %q; want %q", www, got, newOwner)
			}
			if got := g.lookup(www, mdns.TypeA); !slices.Equal(got, addrs) {
				t.Errorf("%s after apply: A %q; want it kept, %q", www, got, addrs)
			}
			g.MustRun(0, "plan", "--detailed-exitcode", "--target", "front")

			g.MustRun(0, "destroy", "--yes", "--target", "front")
			if a, o := g.lookup(www, mdns.TypeA), g.lookup("_slipway."+www, mdns.TypeTXT); len(a)+len(o) != 0 {
				t.Errorf("%s after destroy: A %q, owner %q; want it retired", www, a, o)
			}
			if _, err := g.Kube.Clientset.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err == nil {
				// Terminating is gone enough: destroy waits for it; a namespace still there is left.
				t.Errorf("namespace %s is left after destroy", ns)
			}
			if backend == "file" {
				for _, k := range []string{key, old} {
					if d, err := open(k).Read(ctx); d != nil || err != nil {
						t.Errorf("state %s after destroy: %v, %v", k, d, err)
					}
				}
			}
		})
	}
}

// asEarlierRelease makes the applied target what the release before deployment keys left: its
// state under the old key (written by the backend, as that release wrote it, lineage kept),
// the namespace, every object and every pod template labelled with the old key.
func (g *Group) asEarlierRelease(ns string, cur, old state.Backend, key, oldKey string) {
	g.t.Helper()
	ctx := context.Background()
	d, err := cur.Read(ctx)
	if err != nil || d == nil {
		g.t.Fatalf("state %s: %v, %v", key, d, err)
	}
	if err := cur.Delete(ctx); err != nil {
		g.t.Fatal(err)
	}
	d.Group, d.Serial = oldKey, 0
	if err := old.Write(ctx, d); err != nil {
		g.t.Fatal(err)
	}
	live, err := g.Kube.ListManaged(ctx, ns, spec.LabelGroup+"="+key)
	if err != nil {
		g.t.Fatal(err)
	}
	for k, u := range live {
		if u.GetLabels()["app.kubernetes.io/component"] == "state" {
			continue // the new key's lock, gone with its run
		}
		if err := g.Kube.Relabel(ctx, k, string(u.GetUID()), spec.LabelGroup, key, oldKey); err != nil {
			g.t.Fatal(err)
		}
		if k.Kind == "Deployment" {
			patch := `{"spec":{"template":{"metadata":{"labels":{"slipway.dev/group":"` + oldKey + `"}}}}}`
			if _, err := g.Kube.Clientset.AppsV1().Deployments(ns).Patch(ctx, k.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				g.t.Fatal(err)
			}
		}
	}
	g.waitRolledOut(ns)
	nsObj, err := g.Kube.Namespace(ctx, ns)
	if err != nil || nsObj == nil {
		g.t.Fatalf("namespace %s: %v", ns, err)
	}
	if err := g.Kube.Relabel(ctx, plan.Key{Kind: "Namespace", Name: ns}, string(nsObj.GetUID()), spec.LabelGroup, key, oldKey); err != nil {
		g.t.Fatal(err)
	}
}

// waitRolledOut waits until every Deployment of ns runs its current template alone: the
// earlier release's pod template label is a new template, so each node rolls out once more,
// and status reports it progressing (not ready) until the pod of the old template is gone.
func (g *Group) waitRolledOut(ns string) {
	g.t.Helper()
	ctx := context.Background()
	devtest.WaitFor(g.t, 2*time.Minute, "the Deployments of "+ns+" rolled out on the relabelled template", func() (bool, string) {
		ds, err := g.Kube.Clientset.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, d := range ds.Items {
			want := int32(1)
			if d.Spec.Replicas != nil {
				want = *d.Spec.Replicas
			}
			st := d.Status
			if st.ObservedGeneration < d.Generation || st.UpdatedReplicas != want || st.ReadyReplicas != want || st.Replicas != want {
				return false, fmt.Sprintf("%s: generation %d observed %d, %d updated, %d ready, %d pods", d.Name, d.Generation, st.ObservedGeneration, st.UpdatedReplicas, st.ReadyReplicas, st.Replicas)
			}
			pods, err := g.Kube.Clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + d.Name})
			if err != nil {
				return false, err.Error()
			}
			if len(pods.Items) != int(want) {
				return false, fmt.Sprintf("%s: %d pods, old ones terminating", d.Name, len(pods.Items))
			}
		}
		return true, ""
	})
}

// labelled names the objects of ns labelled slipway.dev/group=key.
func (g *Group) labelled(ns, key string) []string {
	g.t.Helper()
	live, err := g.Kube.ListManaged(context.Background(), ns, spec.LabelGroup+"="+key)
	if err != nil {
		g.t.Fatal(err)
	}
	var out []string
	for k := range live {
		out = append(out, k.Kind+"/"+k.Name)
	}
	return out
}

// claimUIDs maps each claim of ns to its UID.
func (g *Group) claimUIDs(ns string) map[string]string {
	g.t.Helper()
	l, err := g.Kube.Clientset.CoreV1().PersistentVolumeClaims(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		g.t.Fatal(err)
	}
	out := map[string]string{}
	for _, c := range l.Items {
		out[c.Name] = string(c.UID)
	}
	return out
}
