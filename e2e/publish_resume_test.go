package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	mdns "github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slipway.dev/slipway/internal/devcluster"
)

// A template applied while the group is suspended fails at resume: resume sets the node back
// to its last template that became ready, and the node, running ready, gets its name back
// (issue 35 item 11).
func TestPublishResumeSetBack(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "pubresume", moveGroup, "www")
	zone := g.Name + "." + devcluster.DNSZone
	g.WithEnv("K8S_GATEWAY=", "SLIPWAY_DNS_SERVER="+g.Env.DNSServer,
		"SLIPWAY_TSIG_SECRET_FILE="+g.Env.TSIGSecretFile, "SLIPWAY_TSIG_SECRET=")
	write := func(env string) {
		g.WriteFile("slipway.yaml", strings.NewReplacer("{{GROUP}}", g.Name, "{{ZONE}}", zone,
			"{{PORTS}}", "8443", "{{ENV}}", env).Replace(moveGroup))
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
		return out
	}
	write("{}")
	g.MustRun(0, "apply", "--yes")
	svc, err := g.Kube.Clientset.CoreV1().Services(g.Name).Get(context.Background(), "www", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	addr := []string{lbAddress(t, svc)}
	g.MustRun(0, "suspend", "--yes")
	if got := queryA(); len(got) != 0 {
		t.Fatalf("suspended: A %v, want none", got)
	}
	write("{" + devcluster.DevPodVar + ": " + devcluster.OutcomeCrashLoop + "}")
	g.MustRun(0, "apply", "--yes") // suspended: the template is applied at 0 replicas
	r := g.MustRun(1, "resume", "--yes")
	if !strings.Contains(r.Stdout+r.Stderr, "rolled back") {
		t.Fatalf("resume of a failing template: want a rollback\n%s", r)
	}
	if got := queryA(); !slices.Equal(got, addr) {
		t.Errorf("after resume set www back: A %v, want %v (it runs ready)", got, addr)
	}
}
