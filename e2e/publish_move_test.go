package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	mdns "github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"slipway.dev/slipway/internal/devcluster"
)

// moveGroup is node www with one name, its ports {{PORTS}} ("80, 443" puts it behind the
// Gateway) and its env {{ENV}} (SLIPWAY_DEV_POD picks a simulated outcome of its pod).
const moveGroup = `group: {{GROUP}}
publish:
  zone: {{ZONE}}
  addressTimeout: 2m
  ttl: 60
  dns: {key: slipway-dev}
nodes:
  www:
    image: {rootfs: nodes/www/rootfs}
    init: none
    env: {{ENV}}
    firewall: {served: [{{PORTS}}], published: [{{PORTS}}]}
    publishedNames: [www.{{ZONE}}]
`

// A node moves from its own load-balancer address to the Gateway in a release whose rollout
// fails: its Service is replaced (the address given back), and its name must not be left on
// that address. Make before break: the routes are Accepted and the name on the Gateway's
// address before the Service goes, so that after the rollback the name points at the
// Gateway, which routes to what runs (issue 35 item 2).
func TestPublishMoveToGatewayFailedRollout(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "pubmove", moveGroup, "www")
	zone := g.Name + "." + devcluster.DNSZone
	g.WithEnv("K8S_GATEWAY="+devGateway, "SLIPWAY_DNS_SERVER="+g.Env.DNSServer,
		"SLIPWAY_TSIG_SECRET_FILE="+g.Env.TSIGSecretFile, "SLIPWAY_TSIG_SECRET=")
	write := func(ports, env string) {
		g.WriteFile("slipway.yaml", strings.NewReplacer("{{GROUP}}", g.Name, "{{ZONE}}", zone,
			"{{PORTS}}", ports, "{{ENV}}", env).Replace(moveGroup))
	}
	ctx := context.Background()
	service := func() *corev1.Service {
		s, err := g.Kube.Clientset.CoreV1().Services(g.Name).Get(ctx, "www", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	queryA := func() []string {
		m := new(mdns.Msg)
		m.SetQuestion(mdns.Fqdn("www."+zone), mdns.TypeA)
		r, _, err := (&mdns.Client{Net: "tcp", Timeout: 10 * time.Second}).Exchange(m, g.Env.DNSServer)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, rr := range r.Answer {
			if a, ok := rr.(*mdns.A); ok {
				out = append(out, a.A.String())
			}
		}
		slices.Sort(out)
		return out
	}

	write("8443", "{}")
	g.MustRun(0, "apply", "--yes")
	own := lbAddress(t, service())
	if got := queryA(); !slices.Equal(got, []string{own}) {
		t.Fatalf("www after the first apply: A %v, want its own address %s", got, own)
	}

	gc, err := gwclient.NewForConfig(g.Kube.Config)
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gc.GatewayV1().Gateways("slipway-dev").Get(ctx, "public", metav1.GetOptions{})
	if err != nil || len(gw.Status.Addresses) == 0 {
		t.Fatalf("gateway %s: no address: %v", devGateway, err)
	}
	var gwAddrs []string
	for _, a := range gw.Status.Addresses {
		gwAddrs = append(gwAddrs, a.Value)
	}
	slices.Sort(gwAddrs)

	write("80, 443", "{"+devcluster.DevPodVar+": "+devcluster.OutcomeCrashLoop+"}")
	r := g.MustRun(1, "apply", "--yes")
	if !strings.Contains(r.Stdout+r.Stderr, "rolled back") {
		t.Fatalf("apply of the failing release: want a rollback\n%s", r)
	}
	if typ := service().Spec.Type; typ != corev1.ServiceTypeClusterIP {
		t.Errorf("service www after the move: type %s, want ClusterIP", typ)
	}
	if got := queryA(); !slices.Equal(got, gwAddrs) {
		t.Errorf("www after the failed release: A %v, want the Gateway's %v (its own address %s was given back)", got, gwAddrs, own)
	}
	if _, err := gc.GatewayV1().TLSRoutes(g.Name).Get(ctx, "www", metav1.GetOptions{}); err != nil {
		t.Errorf("TLSRoute www after the failed release: %v", err)
	}

	write("80, 443", "{}")
	g.MustRun(0, "apply", "--yes")
	g.MustRun(0, "plan", "--detailed-exitcode")
	if got := queryA(); !slices.Equal(got, gwAddrs) {
		t.Errorf("www after the fixed release: A %v, want the Gateway's %v", got, gwAddrs)
	}
}
