package e2e

// Published names (Knot DNS, dev up --publish) through suspend, resume, a dropped name,
// destroy and a killed apply; helpers in publish_dns_test.go.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	mdns "github.com/miekg/dns"

	"slipway.dev/slipway/internal/devcluster/devtest"
)

// Suspend retires the names and keeps the mail records; resume publishes them again; a name
// dropped from the file is retired; destroy retires everything, mail included.
func TestPublishDNSLifecycle(t *testing.T) {
	t.Parallel()
	d := newDNSTest(t, "dnslife")
	d.run(0, "apply", "--yes")
	d.checkPublished("www", "app")
	agree := map[string]string{"web": "agrees", "mx": "agrees"}
	if diff := cmp.Diff(agree, d.dnsStatus()); diff != "" {
		t.Errorf("status after apply: dns (-want +got):\n%s", diff)
	}
	d.run(0, "suspend", "--yes")
	if diff := cmp.Diff(agree, d.dnsStatus()); diff != "" {
		t.Errorf("status after suspend: dns (-want +got):\n%s", diff)
	}
	for _, n := range []string{"www", "app", "mx"} {
		if got := d.query(n+"."+d.Zone, mdns.TypeA); len(got) != 0 {
			t.Errorf("suspended: A %s.%s = %v, want none", n, d.Zone, got)
		}
	}
	d.checkMail(true)
	d.run(0, "resume", "--yes")
	d.checkPublished("www", "app")
	d.write(300, "www")
	r := d.run(0, "plan")
	if !strings.Contains(r.Stdout, "retire dns app."+d.Zone) {
		t.Errorf("plan after dropping app does not retire it:\n%s", r)
	}
	d.run(0, "apply", "--yes")
	if got := d.query("app."+d.Zone, mdns.TypeA); len(got) != 0 {
		t.Errorf("dropped name app still has A %v", got)
	}
	if got := d.query("_slipway.app."+d.Zone, mdns.TypeTXT); len(got) != 0 {
		t.Errorf("dropped name app still has its owner TXT %v", got)
	}
	d.checkPublished("www")
	d.run(0, "destroy", "--yes")
	for _, n := range []string{"www." + d.Zone, "_slipway.www." + d.Zone, "mx." + d.Zone} {
		if got := append(d.query(n, mdns.TypeA), d.query(n, mdns.TypeTXT)...); len(got) != 0 {
			t.Errorf("after destroy %s holds %v", n, got)
		}
	}
	d.checkMail(false)
}

// SIGKILL while apply publishes (≥5 random trials, each changing every set's TTL): the next
// apply converges (plan: No changes., every record at the new TTL) and a foreign record next
// to the group's names is never touched.
func TestPublishDNSKilled(t *testing.T) {
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	d := newDNSTest(t, "dnskill")
	// Someone else's: a name with an owner TXT of another cluster, and a TXT at the apex
	// beside the group's SPF.
	foreignUpdate(t, d, "other."+d.Zone+". 60 IN A 198.51.100.7", fmt.Sprintf(`_slipway.other.%s. 60 IN TXT "heritage=slipway,owner=someone/else@x,node=web"`, d.Zone),
		d.Zone+`. 60 IN TXT "site-verification=abc"`)
	d.apexTXT = []string{`"site-verification=abc"`}
	d.run(0, "apply", "--yes")
	const trials = 6
	for trial := 1; trial <= trials; trial++ {
		ttl := 300 + trial
		d.write(ttl, "www", "app")
		d.DNS.Reset()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := d.Command(ctx, "apply", "--yes")
		if err := cmd.Start(); err != nil {
			cancel()
			t.Fatal(err)
		}
		// Kill once the run is publishing: after its first UPDATE, and a little more.
		deadline := time.Now().Add(time.Minute)
		for !slices.ContainsFunc(d.DNS.Requests(), func(r devtest.Request) bool { return r.Method == "UPDATE" }) {
			if time.Now().After(deadline) {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
				cancel()
				t.Fatalf("trial %d: no UPDATE reached the server within a minute of the apply's start", trial)
			}
			time.Sleep(2 * time.Millisecond)
		}
		after := time.Duration(rng.Int64N(int64(30 * time.Millisecond)))
		time.Sleep(after)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		cancel()
		sent := d.updates()
		if st := d.State(); st.Lock != nil {
			d.MustRun(0, "state", "unlock", st.Lock.ID)
		}
		d.run(0, "apply", "--yes")
		if r := d.run(0, "plan", "--detailed-exitcode"); !strings.Contains(r.Stdout, "No changes.") {
			t.Fatalf("trial %d: plan after the converging apply: %s", trial, r)
		}
		d.checkPublished("www", "app")
		m := new(mdns.Msg)
		m.SetQuestion("www."+d.Zone+".", mdns.TypeA)
		if r, _, err := (&mdns.Client{Net: "tcp", Timeout: 10 * time.Second}).Exchange(m, d.Env.DNSServer); err != nil || len(r.Answer) != 1 || r.Answer[0].Header().Ttl != uint32(ttl) {
			t.Fatalf("trial %d: www's A after converging: %v, %v; want TTL %d", trial, r, err, ttl)
		}
		if got := d.query("other."+d.Zone, mdns.TypeA); !slices.Equal(got, []string{"198.51.100.7"}) {
			t.Fatalf("trial %d: the foreign record changed: %v", trial, got)
		}
		t.Logf("trial %d: killed %s after the first UPDATE (%d UPDATEs sent before the kill)", trial, after.Round(time.Millisecond), sent)
	}
}
