package e2e

// Issue 46, the many-tenants check: 20 deployments whose joined names collide (a target and a
// group of the joined name, a namespace and a node that join to another's, deployment ids of
// one file, two groups of one waves file), applied 4 runs at once; deployments that would take
// another's namespace are refused at plan; then half are destroyed, 4 runs at once, and the
// other half's objects, claims, states and DNS records are as they were (the deployments
// use no SPIRE server: the lane's entries are not part of the check).

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	mdns "github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slipway.dev/slipway/internal/spec"
)

// tenantView is what the check compares: per namespace, its objects (Kind/name → uid and
// resourceVersion, the Namespace itself and its pods included); per key, its state file.
type tenantView struct {
	Objects map[string]map[string]string
	States  map[string]string
}

// view reads the namespaces and the state files of keys under the test's directory.
func (g *Group) view(namespaces, keys []string) tenantView {
	g.t.Helper()
	ctx := context.Background()
	v := tenantView{Objects: map[string]map[string]string{}, States: map[string]string{}}
	for _, ns := range namespaces {
		objs := map[string]string{}
		if n, err := g.Kube.Clientset.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err == nil {
			objs["Namespace/"+ns] = string(n.UID) + "@" + n.ResourceVersion + deleting(n.DeletionTimestamp)
		}
		live, err := g.Kube.ListManaged(ctx, ns, "")
		if err != nil {
			g.t.Fatal(err)
		}
		for k, o := range live {
			objs[k.Kind+"/"+k.Name] = string(o.GetUID()) + "@" + o.GetResourceVersion()
		}
		pods, err := g.Kube.Clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			g.t.Fatal(err)
		}
		for _, p := range pods.Items {
			objs["Pod/"+p.Name] = string(p.UID) + deleting(p.DeletionTimestamp) // kwok's status updates move its resourceVersion
		}
		v.Objects[ns] = objs
	}
	for _, key := range keys {
		matches, _ := filepath.Glob(filepath.Join(g.Dir, "*", ".slipway", "state", key+".json"))
		top, _ := filepath.Glob(filepath.Join(g.Dir, ".slipway", "state", key+".json"))
		for _, m := range append(matches, top...) {
			data, err := os.ReadFile(m)
			if err != nil {
				g.t.Fatal(err)
			}
			v.States[key] += string(data)
		}
	}
	return v
}

func deleting(t *metav1.Time) string {
	if t != nil {
		return " deleting"
	}
	return ""
}

// settled reads the view until two reads a second apart agree (controllers finish their
// last status writes after a rollout is Ready), within a minute.
func (g *Group) settled(namespaces, keys []string) tenantView {
	g.t.Helper()
	last := g.view(namespaces, keys)
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		time.Sleep(time.Second)
		v := g.view(namespaces, keys)
		if cmp.Equal(last, v) {
			return v
		}
		last = v
	}
	g.t.Fatalf("the deployments' objects did not settle within a minute")
	return last
}

func TestManyTenants(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "mt", "group: unused\nnodes: {}\n")
	ts, waves := tenantSet(g, g.Name)
	var namespaces, keys []string
	runs := []tenantRun{waves}
	for _, d := range ts {
		namespaces, keys = append(namespaces, d.ns), append(keys, d.key)
		if !slices.Contains(waves.of, d.key) {
			runs = append(runs, tenantRun{dir: d.dir, args: d.args, of: []string{d.key}})
		}
	}
	g.dropNamespaces(namespaces...)
	if n := len(slices.Compact(slices.Sorted(slices.Values(keys)))); n != 20 {
		t.Fatalf("want 20 deployments with 20 keys, got %d keys: %v", n, keys)
	}

	g.WithEnv("SLIPWAY_DNS_SERVER="+g.Env.DNSServer, "SLIPWAY_TSIG_SECRET_FILE="+g.Env.TSIGSecretFile, "SLIPWAY_TSIG_SECRET=", "K8S_GATEWAY=")
	g.runAll("apply", runs, 4)
	before := g.settled(namespaces, keys)
	names := map[string]string{ // published name → its deployment's key
		"solo-idsa." + tenantZone(g.Name): g.Name + "-ids-a", "solo-w1." + tenantZone(g.Name): g.Name + "-w1", "solo-w2." + tenantZone(g.Name): g.Name + "-w2",
	}
	records := g.tenantRecords(names)
	for name, key := range names {
		if r := records[name]; len(r.A) == 0 || !strings.Contains(strings.Join(r.Owner, " "), "owner="+key+"/") {
			t.Errorf("name %s of deployment %s: records %+v, want an address and the owner TXT naming %s", name, key, r, key)
		}
	}
	for _, d := range ts {
		if before.States[d.key] == "" || !strings.Contains(before.States[d.key], `"`+d.ns+`"`) {
			t.Errorf("deployment %s: no state, or one without namespace %s: %q", d.key, d.ns, before.States[d.key])
		}
		if len(before.Objects[d.ns]) < 4 {
			t.Errorf("deployment %s: namespace %s holds %v", d.key, d.ns, before.Objects[d.ns])
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	g.refusedNamespaces(ts, g.Name)
	if d := cmp.Diff(before, g.settled(namespaces, keys)); d != "" {
		t.Fatalf("a refused deployment changed the others (-before +after):\n%s", d)
	}

	var destroys []tenantRun
	var keptNS, keptKeys, goneNS []string
	for _, d := range ts {
		if d.destroy {
			destroys = append(destroys, tenantRun{dir: d.dir, args: d.args, of: []string{d.key}})
			goneNS = append(goneNS, d.ns)
		} else {
			keptNS, keptKeys = append(keptNS, d.ns), append(keptKeys, d.key)
		}
	}
	if len(destroys) != 10 {
		t.Fatalf("want half destroyed, got %d", len(destroys))
	}
	g.runAll("destroy", destroys, 4)
	after := g.view(keptNS, keptKeys)
	want := tenantView{Objects: map[string]map[string]string{}, States: map[string]string{}}
	for _, ns := range keptNS {
		want.Objects[ns] = before.Objects[ns]
	}
	for _, k := range keptKeys {
		want.States[k] = before.States[k]
	}
	if d := cmp.Diff(want, after); d != "" {
		t.Errorf("the deployments kept changed when the others were destroyed (-before +after):\n%s", d)
	}
	// The DNS records: the kept deployments' as they were, the destroyed one's retired.
	wantRecords := map[string]tenantRecord{}
	for name, key := range names {
		if slices.Contains(keptKeys, key) {
			wantRecords[name] = records[name]
		} else {
			wantRecords[name] = tenantRecord{}
		}
	}
	if d := cmp.Diff(wantRecords, g.tenantRecords(names)); d != "" {
		t.Errorf("DNS records after the destroys (-want +got):\n%s", d)
	}
	for _, ns := range goneNS {
		n, err := g.Kube.Clientset.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{})
		if err == nil && n.DeletionTimestamp == nil {
			t.Errorf("namespace %s is there after its deployment's destroy, with Deployments %v", ns, g.deployments(ns))
		}
	}
	if !t.Failed() {
		g.runAll("destroy", keptRuns(ts), 4)
	}
}

// refusedNamespaces: deployments whose namespace another deployment owns (a group of the
// joined name of a target; one of a deployment id's) are refused at plan, and at apply,
// naming the namespace and its owner, and leave no state of their own.
func (g *Group) refusedNamespaces(ts []tenant, p string) {
	t := g.t
	t.Helper()
	owner := map[string]tenant{}
	for _, d := range ts {
		owner[d.ns] = d
	}
	g.WriteFile("sf/slipway.yaml", strings.ReplaceAll(tenantShop, "{{NAME}}", p+"-shop-front"))
	g.WriteFile("sf/nodes/n/rootfs/etc/hostname", "sf\n")
	g.WriteFile("idsb/slipway.yaml", strings.NewReplacer("{{NAME}}", p+"-ids-b", "{{NS}}", p+"-ids-b", "{{NODE}}", "solo").Replace(tenantOne))
	g.WriteFile("idsb/nodes/n/rootfs/etc/hostname", "solo\n")
	for _, c := range []struct {
		name, dir, ns, key string
		args               []string
	}{
		{"group of a target's joined name", "sf", p + "-shop-front", p + "-shop-front", nil},
		{"the same with a deployment id", "sf", p + "-shop-front-a", p + "-shop-front.all.a", []string{"--deployment-id", "a"}},
		{"group of a deployment id's joined name", "idsb", p + "-ids-b", p + "-ids-b", nil},
	} {
		own, ok := owner[c.ns]
		if !ok {
			t.Fatalf("%s: no deployment owns %s", c.name, c.ns)
		}
		id, _ := spec.ParseKey(own.key)
		file := []string{"-f", filepath.Join(c.dir, "slipway.yaml")}
		for _, verb := range [][]string{{"plan"}, {"apply", "--yes"}} {
			r := g.Run(append(append(verb, file...), c.args...)...)
			if r.Code == 0 || !strings.Contains(r.Stderr, c.ns) || !(strings.Contains(r.Stderr, own.key) || strings.Contains(r.Stderr, id.String())) {
				t.Errorf("%s: %s into %s, owned by %s: want a refusal naming the namespace and its owner, got %s", c.name, verb[0], c.ns, own.key, r)
			}
		}
		if st := g.view(nil, []string{c.key}).States[c.key]; st != "" {
			t.Errorf("%s: the refused deployment %s left a state: %s", c.name, c.key, st)
		}
	}
}

// tenantRecord is what the check compares of a published name: its A records and the owner
// TXT beside it (the TTLs included).
type tenantRecord struct {
	A, Owner []string
}

// tenantRecords reads each name's A records and owner TXT (_slipway.<name>) from the dev
// environment's Knot.
func (g *Group) tenantRecords(names map[string]string) map[string]tenantRecord {
	g.t.Helper()
	out := map[string]tenantRecord{}
	for name := range names {
		out[name] = tenantRecord{A: g.lookup(name, mdns.TypeA), Owner: g.lookup("_slipway."+name, mdns.TypeTXT)}
	}
	return out
}

// lookup asks the dev environment's DNS server for the records of type typ at name, as text.
func (g *Group) lookup(name string, typ uint16) []string {
	g.t.Helper()
	m := new(mdns.Msg)
	m.SetQuestion(mdns.Fqdn(name), typ)
	r, _, err := (&mdns.Client{Net: "tcp", Timeout: 10 * time.Second}).Exchange(m, g.Env.DNSServer)
	if err != nil {
		g.t.Fatalf("query %s %s: %v", name, mdns.TypeToString[typ], err)
	}
	var out []string
	for _, rr := range r.Answer {
		if rr.Header().Rrtype == typ {
			out = append(out, rr.String())
		}
	}
	slices.Sort(out)
	return out
}
