package e2e

// Issue 46, the many-tenants check: 20 deployments whose joined names collide (a target and a
// group of the joined name, a namespace and a node that join to another's, deployment ids of
// one file, two groups of one waves file), applied 4 runs at once; deployments that would take
// another's namespace are refused at plan; then half are destroyed, 4 runs at once, and the
// other half's objects, claims, states and DNS records are as they were (the deployments
// use no SPIRE server: the lane's entries are not part of the check).

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	mdns "github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slipway.dev/slipway/internal/devcluster"
	"slipway.dev/slipway/internal/spec"
)

// tenantShop is the group whose targets and ids collide with other groups' names.
const tenantShop = `group: {{NAME}}
nodes:
  web:
    app: front
    image: {rootfs: nodes/n/rootfs}
    init: none
    firewall: {served: [80]}
  cache:
    app: front
    image: {rootfs: nodes/n/rootfs}
    init: none
    firewall: {served: [6379]}
  db:
    app: data
    image: {rootfs: nodes/n/rootfs}
    init: none
    firewall: {served: [5432]}
    state: {size: 1Gi}
`

// tenantOne is a group of one node {{NODE}} with a claim, in namespace {{NS}}.
const tenantOne = `group: {{NAME}}
namespace: {{NS}}
nodes:
  {{NODE}}:
    image: {rootfs: nodes/n/rootfs}
    init: none
    firewall: {served: [80]}
    state: {size: 1Gi}
`

// tenantPublished is tenantOne with its node published as {{NODE}}-{{DIR}}.{{ZONE}} on the dev
// environment's Knot (SPEC §7), its address its own LoadBalancer Service's.
const tenantPublished = `group: {{NAME}}
namespace: {{NS}}
publish:
  zone: {{ZONE}}
  addressTimeout: 2m
  dns: {key: slipway-dev}
nodes:
  {{NODE}}:
    image: {rootfs: nodes/n/rootfs}
    init: none
    firewall: {served: [8443], published: [8443]}
    publishedNames: [{{NODE}}-{{DIR}}.{{ZONE}}]
    state: {size: 1Gi}
`

// tenant is one deployment of the check: the directory of its group file, the run's flags,
// its key (spec.Identity) and namespace (FR-021), and whether the check destroys it.
type tenant struct {
	dir, key, ns string
	args         []string
	destroy      bool
}

// tenantRun is one run of the binary: a deployment alone, or a waves file (several).
type tenantRun struct {
	dir  string
	args []string
	of   []string // the keys it applies
}

// tenantSet writes the group files under root, named from p, and returns the 20 deployments
// and the waves file's run.
func tenantSet(g *Group, p string) ([]tenant, tenantRun) {
	// The groups of one deployment each publish a name (a file's names are the same for every
	// deployment id of it, and two deployments never share a name).
	published := []string{"idsa", "w1", "w2"}
	one := func(dir, name, ns, node string) {
		tmpl := tenantOne
		if slices.Contains(published, dir) {
			tmpl = tenantPublished
		}
		g.WriteFile(dir+"/slipway.yaml", strings.NewReplacer("{{NAME}}", name, "{{NS}}", ns, "{{NODE}}", node, "{{DIR}}", dir, "{{ZONE}}", tenantZone(p)).Replace(tmpl))
		g.WriteFile(dir+"/nodes/n/rootfs/etc/hostname", node+"\n")
	}
	g.WriteFile("shop/slipway.yaml", strings.ReplaceAll(tenantShop, "{{NAME}}", p+"-shop"))
	g.WriteFile("shop/nodes/n/rootfs/etc/hostname", "shop\n")
	one("shopdata", p+"-shop-data", p+"-sd", "db")    // key shop-data, target data's is shop.data
	one("host", p+"-host", p+"-host", "web-db")       // namespace host, node web-db …
	one("hostweb", p+"-hostweb", p+"-host-web", "db") // … namespace host-web, node db
	one("ids", p+"-ids", p+"-ids", "solo")            // deployment ids a, b, c, d and none
	one("idsa", p+"-ids-a", p+"-ida", "solo")         // key ids-a, deployment id a's is ids.all.a
	one("w1", p+"-w1", p+"-w1", "solo")               // two groups of one waves file
	one("w2", p+"-w2", p+"-w2", "solo")               //
	g.WriteFile("waves.yaml", "groups:\n  - {name: w1, file: w1/slipway.yaml}\n  - {name: w2, file: w2/slipway.yaml, dependsOn: [w1]}\n")

	// dep is a deployment of the group file in dir (group name, namespace base), whose
	// namespace FR-021 lengthens by the target and the id.
	dep := func(dir, group, base, target, id string, destroy bool) tenant {
		ns := base
		var args []string
		if target != "" {
			args = append(args, "--target", target)
			ns += "-" + target
		}
		if id != "" {
			args = append(args, "--deployment-id", id)
			ns += "-" + id
		}
		key := spec.Identity{Group: group, Target: target, ID: id}.Key()
		return tenant{dir: dir, key: key, ns: ns, args: args, destroy: destroy}
	}
	shop, ids := p+"-shop", p+"-ids"
	ts := []tenant{
		dep("shop", shop, shop, "front", "", true),
		dep("shop", shop, shop, "data", "", false),
		dep("shop", shop, shop, "front", "a", false),
		dep("shop", shop, shop, "front", "b", true),
		dep("shop", shop, shop, "", "a", false),
		dep("shop", shop, shop, "data", "b", true),
		dep("shopdata", p+"-shop-data", p+"-sd", "", "", true),
		dep("shopdata", p+"-shop-data", p+"-sd", "", "a", false),
		dep("host", p+"-host", p+"-host", "", "", true),
		dep("host", p+"-host", p+"-host", "", "z", false),
		dep("hostweb", p+"-hostweb", p+"-host-web", "", "", false),
		dep("hostweb", p+"-hostweb", p+"-host-web", "", "z", true),
		dep("ids", ids, ids, "", "a", true),
		dep("ids", ids, ids, "", "b", false),
		dep("ids", ids, ids, "", "c", false),
		dep("ids", ids, ids, "", "d", true),
		dep("ids", ids, ids, "", "", true),
		dep("idsa", p+"-ids-a", p+"-ida", "", "", false),
		dep("w1", p+"-w1", p+"-w1", "", "", false),
		dep("w2", p+"-w2", p+"-w2", "", "", true),
	}
	return ts, tenantRun{dir: ".", args: []string{"-f", "waves.yaml"}, of: []string{p + "-w1", p + "-w2"}}
}

// runAll runs every run, n at once, and fails the test naming each run that did not exit 0.
func (g *Group) runAll(verb string, runs []tenantRun, n int) {
	g.t.Helper()
	work := make(chan tenantRun)
	var mu sync.Mutex
	var failed []string
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for r := range work {
				args := append([]string{verb, "--yes"}, r.args...)
				if r.dir != "." {
					args = append(args, "-f", filepath.Join(r.dir, "slipway.yaml"))
				}
				res := g.Run(args...)
				if res.Code != 0 {
					mu.Lock()
					failed = append(failed, fmt.Sprintf("%s of %v: %s", verb, r.of, res))
					mu.Unlock()
				}
			}
		})
	}
	for _, r := range runs {
		work <- r
	}
	close(work)
	wg.Wait()
	if len(failed) > 0 {
		g.t.Fatalf("%d of %d runs failed:\n%s", len(failed), len(runs), strings.Join(failed, "\n"))
	}
}

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

// keptRuns are the destroys of the deployments the check kept.
func keptRuns(ts []tenant) []tenantRun {
	var out []tenantRun
	for _, d := range ts {
		if !d.destroy {
			out = append(out, tenantRun{dir: d.dir, args: d.args, of: []string{d.key}})
		}
	}
	return out
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

// tenantZone is the test's own zone under the dev environment's.
func tenantZone(p string) string { return p + "." + devcluster.DNSZone }

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
