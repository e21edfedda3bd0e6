package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	mdns "github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slipway.dev/slipway/internal/devcluster"
	"slipway.dev/slipway/internal/state"
)

// publishedTarget is targetsGroup with publish: on the dev environment's Knot, web of target
// front publishing www.<zone> (its own load-balancer address).
func publishedTarget(g *Group) (zone, name string) {
	g.t.Helper()
	zone = g.Name + "." + devcluster.DNSZone
	name = "www." + zone
	file := strings.Replace(strings.ReplaceAll(targetsGroup, "{{GROUP}}", g.Name),
		"    firewall: {served: [80], published: [80]}\n",
		"    firewall: {served: [80], published: [80]}\n    publishedNames: ["+name+"]\n", 1)
	file = strings.Replace(file, "defaults:\n", "publish:\n  zone: "+zone+"\n  ttl: 300\n  addressTimeout: 2m\n  dns: {key: "+devcluster.TSIGKey+"}\ndefaults:\n", 1)
	g.WriteFile("slipway.yaml", file)
	g.WithEnv("SLIPWAY_DNS_SERVER="+g.Env.DNSServer, "SLIPWAY_TSIG_SECRET_FILE="+g.Env.TSIGSecretFile, "SLIPWAY_TSIG_SECRET=", "K8S_GATEWAY=")
	return zone, name
}

// ownerText is the owner TXT slipway writes for node of the deployment key in namespace ns.
func (g *Group) ownerText(key, ns, node string) string {
	g.t.Helper()
	ks, err := g.Kube.Clientset.CoreV1().Namespaces().Get(context.Background(), "kube-system", metav1.GetOptions{})
	if err != nil {
		g.t.Fatal(err)
	}
	return fmt.Sprintf("heritage=slipway,owner=%s/%s@%s,node=%s", key, ns, ks.UID, node)
}

// setOwnerTXT replaces the owner TXT of name by text, as the earlier release wrote it (signed
// with slipway's key).
func (g *Group) setOwnerTXT(name, text string) {
	g.t.Helper()
	rr, err := mdns.NewRR(fmt.Sprintf(`_slipway.%s. 300 IN TXT %q`, name, text))
	if err != nil {
		g.t.Fatal(err)
	}
	m := new(mdns.Msg)
	m.SetUpdate(devcluster.DNSZone + ".")
	m.RemoveRRset([]mdns.RR{rr})
	m.Insert([]mdns.RR{rr})
	b, err := os.ReadFile(g.Env.TSIGSecretFile)
	if err != nil {
		g.t.Fatal(err)
	}
	key := devcluster.TSIGKey + "."
	m.SetTsig(key, mdns.HmacSHA256, 300, time.Now().Unix())
	r, _, err := (&mdns.Client{Net: "tcp", Timeout: 10 * time.Second, TsigSecret: map[string]string{key: strings.TrimSpace(string(b))}}).Exchange(m, g.Env.DNSServer)
	if err != nil || r.Rcode != mdns.RcodeSuccess {
		g.t.Fatalf("rewrite the owner TXT of %s: %v, %v", name, r, err)
	}
}

// TestAdoptEarlierReleaseWaves: a waves file's per-app target adopts its earlier release's
// state as a single run does: `plan -f waves.yaml` says so, `apply -f waves.yaml` moves the
// state and relabels the objects (deleting none), and a lock the earlier adoption left behind,
// stale (its process gone), is removed by the next run.
func TestAdoptEarlierReleaseWaves(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "adoptw", targetsGroup, "web", "cache", "db")
	ns, key, old := g.Name+"-front", g.Name+".front", g.Name+"-front"
	g.dropNamespaces(ns)
	g.WriteFile("waves.yaml", "groups:\n  - {name: front, file: slipway.yaml, target: front}\n")
	g.MustRun(0, "apply", "--yes", "--target", "front")
	ctx := context.Background()
	open := func(k string) state.Backend {
		b, err := state.Open(ctx, "file://"+filepath.Join(g.Dir, state.DefaultPath(k)), k, g.Kube)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	g.asEarlierRelease(ns, open(key), open(old), key, old)
	claims := g.claimUIDs(ns)

	r := g.MustRun(0, "plan", "-f", "waves.yaml")
	if want := "under the key " + old + ", which is now " + key; !strings.Contains(r.Stdout+r.Stderr, want) {
		t.Errorf("waves plan: want the adoption said (%q):\n%s", want, r)
	}
	g.MustRun(0, "apply", "-f", "waves.yaml", "--yes")
	if d, err := open(old).Read(ctx); d != nil || err != nil {
		t.Errorf("old state after the waves apply: %v, %v; want none", d, err)
	}
	if d, err := open(key).Read(ctx); d == nil || err != nil || d.AdoptedFrom != old || len(d.Nodes) != 2 {
		t.Fatalf("state %s after the waves apply: %+v, %v; want the adopted one", key, d, err)
	}
	if left := g.labelled(ns, old); len(left) != 0 {
		t.Errorf("objects still labelled %s after the waves apply: %q", old, left)
	}
	if d := cmp.Diff(claims, g.claimUIDs(ns)); d != "" {
		t.Errorf("claims re-made by the adoption (-before +after):\n%s", d)
	}

	// The lock a killed adoption leaves: its process is gone.
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	info := state.NewInfo("adopt as " + key)
	info.PID = gone.Process.Pid
	if _, err := open(old).Lock(ctx, info); err != nil {
		t.Fatal(err)
	}
	g.MustRun(0, "plan", "-f", "waves.yaml", "--detailed-exitcode")
	g.MustRun(0, "apply", "-f", "waves.yaml", "--yes")
	if held, err := open(old).LockInfo(ctx); held != nil || err != nil {
		t.Errorf("lock of key %s after the next apply: %+v, %v; want it removed", old, held, err)
	}
	g.MustRun(0, "destroy", "-f", "waves.yaml", "--yes")
}
