package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	mdns "github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slipway.dev/slipway/internal/devcluster"
	"slipway.dev/slipway/internal/devcluster/devtest"
)

// dnsGroup is a published group (SPEC §7) on the dev environment's Knot: web with two names,
// mx with one and the zone's mail records. Their ports are not 80/443, so each keeps its own
// load-balancer address whether or not a Gateway is set. {{ZONE}} is a domain of the test's
// own under dev.test, {{TTL}} the records' TTL.
const dnsGroup = `group: {{GROUP}}
publish:
  zone: {{ZONE}}
  ttl: {{TTL}}
  addressTimeout: 2m
  dns: {key: slipway-dev}
  mail: {relay: mx, dmarc: "v=DMARC1; p=none"}
nodes:
  web:
    image: {rootfs: nodes/web/rootfs}
    init: none
    firewall: {served: [8443], published: [8443]}
    publishedNames: [{{NAMES}}]
  mx:
    image: {rootfs: nodes/mx/rootfs}
    init: none
    firewall: {served: [25], published: [25]}
    publishedNames: [mx.{{ZONE}}]
`

// dnsTest is a published group, the DNS server's counting proxy it sends everything through,
// and the TSIG secret that must appear nowhere.
type dnsTest struct {
	*Group
	Zone   string
	DNS    *devtest.Proxy
	Secret string
	runs   []Result
	// apexTXT are TXT records someone else keeps at the zone's apex, beside the SPF.
	apexTXT []string
}

func newDNSTest(t *testing.T, prefix string) *dnsTest {
	t.Helper()
	g := NewGroup(t, prefix, dnsGroup, "web", "mx")
	d := &dnsTest{Group: g, Zone: g.Name + "." + devcluster.DNSZone}
	b, err := os.ReadFile(g.Env.TSIGSecretFile)
	if err != nil {
		t.Fatal(err)
	}
	d.Secret = strings.TrimSpace(string(b))
	if d.DNS, err = devtest.DNSProxy(g.Env.DNSServer); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.DNS.Close)
	g.WithEnv("SLIPWAY_DNS_SERVER="+d.DNS.Host(), "SLIPWAY_TSIG_SECRET_FILE="+g.Env.TSIGSecretFile, "SLIPWAY_TSIG_SECRET=", "K8S_GATEWAY=")
	d.write(300, "www", "app")
	return d
}

// write writes the group file with ttl and web's names (labels under the zone).
func (d *dnsTest) write(ttl int, names ...string) {
	full := make([]string, len(names))
	for i, n := range names {
		full[i] = n + "." + d.Zone
	}
	d.WriteFile("slipway.yaml", strings.NewReplacer("{{GROUP}}", d.Name, "{{ZONE}}", d.Zone,
		"{{TTL}}", fmt.Sprint(ttl), "{{NAMES}}", strings.Join(full, ", ")).Replace(dnsGroup))
}

// run runs the binary and keeps its output for the secret check.
func (d *dnsTest) run(code int, args ...string) Result {
	d.t.Helper()
	r := d.MustRun(code, args...)
	d.runs = append(d.runs, r)
	return r
}

// updates is the number of UPDATE messages the proxy saw since the last call.
func (d *dnsTest) updates() int {
	n := 0
	for _, r := range d.DNS.Take() {
		if r.Method == "UPDATE" {
			n++
		}
	}
	return n
}

// query asks the server (directly) for the records of type typ at name, as text.
func (d *dnsTest) query(name string, typ uint16) []string {
	d.t.Helper()
	m := new(mdns.Msg)
	m.SetQuestion(mdns.Fqdn(name), typ)
	r, _, err := (&mdns.Client{Net: "tcp", Timeout: 10 * time.Second}).Exchange(m, d.Env.DNSServer)
	if err != nil {
		d.t.Fatalf("query %s %s: %v", name, mdns.TypeToString[typ], err)
	}
	var out []string
	for _, rr := range r.Answer {
		if rr.Header().Rrtype == typ {
			out = append(out, strings.TrimPrefix(rr.String(), rr.Header().String()))
		}
	}
	slices.Sort(out)
	return out
}

// address is the load-balancer address of node's Service.
func (d *dnsTest) address(node string) string {
	d.t.Helper()
	s, err := d.Kube.Clientset.CoreV1().Services(d.Name).Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		d.t.Fatalf("service %s: %v", node, err)
	}
	return lbAddress(d.t, s)
}

// owner is the owner TXT slipway writes for node.
func (d *dnsTest) owner(node string) []string {
	d.t.Helper()
	ks, err := d.Kube.Clientset.CoreV1().Namespaces().Get(context.Background(), "kube-system", metav1.GetOptions{})
	if err != nil {
		d.t.Fatal(err)
	}
	return []string{fmt.Sprintf("%q", fmt.Sprintf("heritage=slipway,owner=%s/%s@%s,node=%s", d.Name, d.Name, ks.UID, node))}
}

// dnsStatus is each node's dns column of `status -o json`.
func (d *dnsTest) dnsStatus() map[string]string {
	d.t.Helper()
	r := d.run(0, "status", "-o", "json")
	var v struct {
		Nodes []struct{ Node, DNS string }
	}
	if err := json.Unmarshal([]byte(r.Stdout), &v); err != nil {
		d.t.Fatalf("status -o json: %v\n%s", err, r)
	}
	out := map[string]string{}
	for _, n := range v.Nodes {
		out[n.Node] = n.DNS
	}
	return out
}

// checkPublished checks A and owner TXT of each of web's names, and the mail records.
func (d *dnsTest) checkPublished(names ...string) {
	d.t.Helper()
	web, mx := d.address("web"), d.address("mx")
	for _, n := range names {
		name := n + "." + d.Zone
		if got := d.query(name, mdns.TypeA); !slices.Equal(got, []string{web}) {
			d.t.Errorf("A %s = %v, want %s", name, got, web)
		}
		if got := d.query("_slipway."+name, mdns.TypeTXT); !slices.Equal(got, d.owner("web")) {
			d.t.Errorf("owner TXT of %s = %v, want %v", name, got, d.owner("web"))
		}
	}
	if got := d.query("mx."+d.Zone, mdns.TypeA); !slices.Equal(got, []string{mx}) {
		d.t.Errorf("A mx.%s = %v, want %s", d.Zone, got, mx)
	}
	d.checkMail(true)
}

// checkMail checks the zone's MX, SPF and _dmarc are there (or gone).
func (d *dnsTest) checkMail(there bool) {
	d.t.Helper()
	spf := append([]string{`"v=spf1 mx -all"`}, d.apexTXT...)
	slices.Sort(spf)
	want := map[string][]string{"mx": {"10 mx." + d.Zone + "."}, "spf": spf, "dmarc": {`"v=DMARC1; p=none"`}}
	if !there {
		want = map[string][]string{"mx": nil, "spf": d.apexTXT, "dmarc": nil}
	}
	got := map[string][]string{"mx": d.query(d.Zone, mdns.TypeMX), "spf": d.query(d.Zone, mdns.TypeTXT), "dmarc": d.query("_dmarc."+d.Zone, mdns.TypeTXT)}
	if diff := cmp.Diff(want, got); diff != "" {
		d.t.Errorf("mail records (-want +got):\n%s", diff)
	}
}

// checkSecretNowhere: the TSIG secret is in no output of any run, no file of the group's
// directory (the state, a saved plan) and no process argument of knotd or slipway.
func (d *dnsTest) checkSecretNowhere(args ...[]string) {
	d.t.Helper()
	for _, r := range d.runs {
		if strings.Contains(r.Stdout+r.Stderr, d.Secret) {
			d.t.Errorf("the TSIG secret is in the output of a run:\n%s", r)
		}
	}
	_ = filepath.WalkDir(d.Dir, func(p string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), d.Secret) {
				d.t.Errorf("the TSIG secret is in %s", p)
			}
		}
		return nil
	})
	pid, err := os.ReadFile(filepath.Join(d.Env.Dir, "pids", "knotd"))
	if err != nil {
		d.t.Fatal(err)
	}
	cmdline, err := os.ReadFile("/proc/" + strings.TrimSpace(string(pid)) + "/cmdline")
	if err != nil || strings.Contains(string(cmdline), d.Secret) {
		d.t.Errorf("knotd's arguments %q (%v) hold the TSIG secret or cannot be read", cmdline, err)
	}
	for _, a := range args {
		if strings.Contains(strings.Join(a, " "), d.Secret) {
			d.t.Errorf("slipway's arguments hold the TSIG secret: %q", a)
		}
	}
}

// Publish, then query the server: A and owner TXT for every name, the mail records; a second
// apply sends no UPDATE and plan says No changes.; the secret is nowhere.
func TestPublishDNS(t *testing.T) {
	t.Parallel()
	d := newDNSTest(t, "pubdns")
	r := d.run(0, "plan")
	for _, want := range []string{"dns www." + d.Zone + ": (known after apply)", "publish dns www." + d.Zone} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("first plan lacks %q:\n%s", want, r)
		}
	}
	d.DNS.Reset()
	d.run(0, "apply", "--yes")
	// www, app, mx, and the zone's MX, SPF and _dmarc: one UPDATE each.
	if n := d.updates(); n != 6 {
		t.Errorf("first apply sent %d UPDATEs, want 6", n)
	}
	d.checkPublished("www", "app")
	r = d.run(0, "plan", "--detailed-exitcode", "-out", "saved.plan")
	if !strings.Contains(r.Stdout, "No changes.") {
		t.Errorf("plan after apply: want No changes., got %s", r)
	}
	d.run(0, "apply", "--yes")
	if n := d.updates(); n != 0 {
		t.Errorf("second apply sent %d UPDATEs, want none", n)
	}
	d.checkSecretNowhere([]string{"apply", "--yes"}, []string{"plan", "--detailed-exitcode", "-out", "saved.plan"})
}

// A record another key holder (the dev environment's second key) made beforehand at a
// published name: plan shows the conflict, apply refuses that node before its rollout and
// leaves the record alone, the other node is published.
func TestPublishDNSConflict(t *testing.T) {
	t.Parallel()
	d := newDNSTest(t, "dnsconf")
	foreignUpdate(t, d, "www."+d.Zone+". 60 IN A 198.51.100.9")
	r := d.run(0, "plan")
	if !strings.Contains(r.Stdout, "conflict") || !strings.Contains(r.Stdout, "www."+d.Zone) || !strings.Contains(r.Stdout, "198.51.100.9") {
		t.Fatalf("plan does not show the conflict at www.%s:\n%s", d.Zone, r)
	}
	r = d.run(1, "apply", "--yes")
	if !strings.Contains(r.Stderr+r.Stdout, "www."+d.Zone) {
		t.Errorf("apply's failure does not name the name:\n%s", r)
	}
	if _, err := d.Kube.Clientset.AppsV1().Deployments(d.Name).Get(context.Background(), "web", metav1.GetOptions{}); err == nil {
		t.Error("the conflicting node web was rolled out")
	}
	if got := d.query("www."+d.Zone, mdns.TypeA); !slices.Equal(got, []string{"198.51.100.9"}) {
		t.Errorf("the foreign record at www.%s is now %v", d.Zone, got)
	}
	if got := d.query("_slipway.www."+d.Zone, mdns.TypeTXT); len(got) != 0 {
		t.Errorf("an owner TXT was written beside the foreign record: %v", got)
	}
	if got := d.query("mx."+d.Zone, mdns.TypeA); !slices.Equal(got, []string{d.address("mx")}) {
		t.Errorf("the other node mx was not published: A = %v", got)
	}
	d.checkMail(true)
	st := d.dnsStatus()
	if st["mx"] != "agrees" || !strings.Contains(st["web"], "conflict") || !strings.Contains(st["web"], "www."+d.Zone) {
		t.Errorf("status dns = %v, want mx agrees and web naming the conflict at www.%s", st, d.Zone)
	}
}

// foreignUpdate adds records as another key holder would: signed with the dev environment's
// other key (slipway-dev-other, not slipway's), no owner TXT.
func foreignUpdate(t *testing.T, d *dnsTest, rrs ...string) {
	t.Helper()
	m := new(mdns.Msg)
	m.SetUpdate(devcluster.DNSZone + ".")
	for _, s := range rrs {
		rr, err := mdns.NewRR(s)
		if err != nil {
			t.Fatal(err)
		}
		m.Insert([]mdns.RR{rr})
	}
	b, err := os.ReadFile(d.Env.OtherTSIGSecretFile())
	if err != nil {
		t.Fatal(err)
	}
	key := devcluster.OtherTSIGKey + "."
	m.SetTsig(key, mdns.HmacSHA256, 300, time.Now().Unix())
	r, _, err := (&mdns.Client{Net: "tcp", Timeout: 10 * time.Second, TsigSecret: map[string]string{key: strings.TrimSpace(string(b))}}).Exchange(m, d.Env.DNSServer)
	if err != nil || r.Rcode != mdns.RcodeSuccess {
		t.Fatalf("update signed with %s: %v, %v", devcluster.OtherTSIGKey, r, err)
	}
}
