package e2e

// Issue 46, the many-tenants check's deployments (tenants_test.go): the group files whose
// joined names collide, and running them several at once.

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"

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

// tenantZone is the test's own zone under the dev environment's.
func tenantZone(p string) string { return p + "." + devcluster.DNSZone }
