package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	mdns "github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slipway.dev/slipway/internal/devcluster"
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
	r, _, err := (&mdns.Client{Net: "tcp", TsigSecret: map[string]string{key: strings.TrimSpace(string(b))}}).Exchange(m, g.Env.DNSServer)
	if err != nil || r.Rcode != mdns.RcodeSuccess {
		g.t.Fatalf("rewrite the owner TXT of %s: %v, %v", name, r, err)
	}
}
