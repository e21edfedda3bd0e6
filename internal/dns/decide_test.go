package dns

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	mdns "github.com/miekg/dns"
)

func TestDecide(t *testing.T) {
	const owner, adopts = "g/ns@uid-1", "g-front/ns@uid-1"
	web := &Set{Name: "web.dev.test", Kind: KindAddress, Values: []string{"192.0.2.1"}, TTL: 300, Node: "web"}
	a := func(ip string, ttl uint32) Record { return Record{Type: "A", Value: ip, TTL: ttl} }
	ours := []string{OwnerText(owner, "web")}
	for _, c := range []struct {
		name     string
		want     *Set
		seen     Seen
		action   Action
		conflict bool
	}{
		{"nothing there: create", web, Seen{}, Create, false},
		{"ours and equal: nothing", web, Seen{Owner: ours, Records: []Record{a("192.0.2.1", 300)}}, None, false},
		{"ours, other address", web, Seen{Owner: ours, Records: []Record{a("192.0.2.9", 300)}}, Update, false},
		{"ours, other ttl", web, Seen{Owner: ours, Records: []Record{a("192.0.2.1", 60)}}, Update, false},
		{"ours, records gone", web, Seen{Owner: ours}, Update, false},
		{"ours, another node of the group", web, Seen{Owner: []string{OwnerText(owner, "api")}, Records: []Record{a("192.0.2.1", 300)}}, Update, false},
		{"records without owner: conflict", web, Seen{Records: []Record{a("198.51.100.1", 60)}}, Conflict, true},
		{"another cluster's owner: conflict", web, Seen{Owner: []string{OwnerText("g/ns@uid-2", "web")}}, Conflict, true},
		{"someone's TXT at the owner name: conflict", web, Seen{Owner: []string{"hello"}}, Conflict, true},
		{"two owner texts: conflict", web, Seen{Owner: []string{ours[0], "x"}}, Conflict, true},
		{"retire ours", nil, Seen{Owner: ours, Records: []Record{a("192.0.2.1", 300)}}, Delete, false},
		{"retire what is gone", nil, Seen{}, None, false},
		{"retire another's: left alone", nil, Seen{Owner: []string{OwnerText("other/ns@uid-1", "web")}}, None, false},
		{"the adopted key's, equal: adopt", web, Seen{Owner: []string{OwnerText(adopts, "web")}, Records: []Record{a("192.0.2.1", 300)}}, Adopt, false},
		{"the adopted key's, other address: adopt", web, Seen{Owner: []string{OwnerText(adopts, "web")}, Records: []Record{a("192.0.2.9", 300)}}, Adopt, false},
		{"retire the adopted key's", nil, Seen{Owner: []string{OwnerText(adopts, "web")}, Records: []Record{a("192.0.2.1", 300)}}, Delete, false},
		{"the adopted key's beside another text: conflict", web, Seen{Owner: []string{OwnerText(adopts, "web"), "x"}}, Conflict, true},
		{"the adopted key in another namespace: conflict", web, Seen{Owner: []string{OwnerText("g-front/other@uid-1", "web")}}, Conflict, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ce := Decide(c.want, "web.dev.test", KindAddress, c.seen, owner, "", adopts)
			if got != c.action || (ce != nil) != c.conflict {
				t.Fatalf("Decide = %q, %v; want %q (conflict %t)", got, ce, c.action, c.conflict)
			}
			if ce != nil {
				if diff := cmp.Diff(c.seen.Records, ce.Records); diff != "" || ce.Name != "web.dev.test" {
					t.Errorf("conflict %+v (-want +got records):\n%s", ce, diff)
				}
			}
		})
	}
}

// Slipway's SPF is one record: another beside it is someone else's, a conflict that is
// neither updated nor retired with slipway's (issue 35 item 7).
func TestDecideSPF(t *testing.T) {
	const owner = "g/ns@uid-1"
	spf := &Set{Name: "dev.test", Kind: KindSPF, Values: []string{"v=spf1 mx -all"}, TTL: 300, Node: "mx"}
	txt := func(v string) Record { return Record{Type: "TXT", Value: v, TTL: 300} }
	ours := []string{spf.OwnerTextOf(owner)}
	was := &Set{Name: "dev.test", Kind: KindSPF, Values: []string{"v=spf1 -all"}, Node: "mx"}
	oursBefore := []string{was.OwnerTextOf(owner)} // what slipway published before the file changed
	legacy := []string{OwnerText(owner, "mx")}     // written before the owner named the value
	theirs, mine := txt("v=spf1 include:x -all"), txt("v=spf1 mx -all")
	for _, c := range []struct {
		name     string
		want     *Set
		seen     Seen
		action   Action
		otherSPF bool
	}{
		{"free: create", spf, Seen{}, Create, false},
		{"another's SPF, no owner: conflict", spf, Seen{Records: []Record{theirs}}, Conflict, false},
		{"ours: nothing", spf, Seen{Owner: ours, Records: []Record{mine}}, None, false},
		{"ours, changed: update", spf, Seen{Owner: oursBefore, Records: []Record{txt("v=spf1 -all")}}, Update, false},
		{"ours beside another's: conflict", spf, Seen{Owner: ours, Records: []Record{theirs, mine}}, Conflict, true},
		{"ours gone, another's there: conflict", spf, Seen{Owner: ours, Records: []Record{theirs}}, Conflict, true},
		{"retire ours", nil, Seen{Owner: ours, Records: []Record{mine}}, Delete, false},
		{"retire ours beside another's: only ours", nil, Seen{Owner: ours, Records: []Record{theirs, mine}}, Delete, false},
		{"legacy owner, one SPF: updated to name it", spf, Seen{Owner: legacy, Records: []Record{mine}}, Update, false},
		{"legacy owner, two SPFs: conflict", spf, Seen{Owner: legacy, Records: []Record{theirs, mine}}, Conflict, true},
		{"legacy owner, two SPFs, retire: conflict", nil, Seen{Owner: legacy, Records: []Record{theirs, mine}}, Conflict, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ce := Decide(c.want, "dev.test", KindSPF, c.seen, owner)
			if got != c.action || (ce != nil) != (c.action == Conflict) {
				t.Fatalf("Decide = %q, %v; want %q", got, ce, c.action)
			}
			if ce != nil {
				if ce.OtherSPF != c.otherSPF || !strings.Contains(ce.Error(), "dns name dev.test") {
					t.Errorf("conflict %q (other SPF %t), want other SPF %t", ce, ce.OtherSPF, c.otherSPF)
				}
			}
		})
	}
}

func TestIsSPF(t *testing.T) {
	for text, want := range map[string]bool{
		"v=spf1 mx -all": true, "v=spf1": true, "V=SPF1 -all": true,
		"v=spf10 -all": false, "v=spf1-all": false, "spf1": false, "": false, "google-site-verification=x": false,
	} {
		if got := IsSPF(text); got != want {
			t.Errorf("IsSPF(%q) = %t, want %t", text, got, want)
		}
	}
}

// TXT text goes on the wire as its bytes, quotes and backslashes included, and reads back
// as them: a value is compared with what the server holds byte for byte.
func TestTXTWireForm(t *testing.T) {
	for _, text := range []string{`v=spf1 mx -all`, `say "hi" \ back`, "tab\there", strings.Repeat("x", 300) + `"`} {
		rr, err := Record{Type: "TXT", Value: text, TTL: 60}.rr("dev.test")
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 1024)
		n, err := mdns.PackRR(rr, buf, 0, nil, false)
		if err != nil {
			t.Fatalf("pack %q: %v", text, err)
		}
		back, _, err := mdns.UnpackRR(buf[:n], 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := rdata(back); got != text {
			t.Errorf("TXT %q reads back as %q", text, got)
		}
	}
}

func TestSetRecords(t *testing.T) {
	for _, c := range []struct {
		set  Set
		want []Record
	}{
		{Set{Kind: KindAddress, Values: []string{"2001:DB8::1", "192.0.2.1"}, TTL: 60}, []Record{{"A", "192.0.2.1", 60}, {"AAAA", "2001:db8::1", 60}}},
		{Set{Kind: KindAddress, Values: []string{"LB.Example.NET."}, TTL: 60}, []Record{{"CNAME", "lb.example.net", 60}}},
		{Set{Kind: KindMX, Values: []string{"10 mx.dev.test"}, TTL: 60}, []Record{{"MX", "10 mx.dev.test", 60}}},
		{Set{Kind: KindSPF, Values: []string{"v=spf1 mx -all"}, TTL: 60}, []Record{{"TXT", "v=spf1 mx -all", 60}}},
	} {
		if diff := cmp.Diff(c.want, c.set.Records()); diff != "" {
			t.Errorf("records of %v (-want +got):\n%s", c.set.Values, diff)
		}
	}
}

// An adopt's UPDATE: the old owner TXT as its prerequisite, and only the owner TXT replaced
// while the records are the wanted ones (else they are replaced too, as an update).
func TestAdoptMessage(t *testing.T) {
	const old, owner = "g-front/ns@uid-1", "g.front/ns@uid-1"
	web := Set{Name: "web.dev.test", Kind: KindAddress, Values: []string{"192.0.2.1"}, TTL: 300, Node: "web"}
	seen := Seen{Owner: []string{OwnerText(old, "web")}, Records: web.Records()}
	c := &Client{}
	m, err := c.message("dev.test.", Change{Action: Adopt, Set: web, Seen: seen, Owner: owner})
	if err != nil {
		t.Fatal(err)
	}
	texts := func(rrs []mdns.RR) []string {
		var out []string
		for _, rr := range rrs {
			out = append(out, strings.ReplaceAll(rr.String(), "\t", " "))
		}
		return out
	}
	wantPre := []string{`_slipway.web.dev.test. 0 IN TXT "heritage=slipway,owner=g-front/ns@uid-1,node=web"`}
	wantUpd := []string{
		"_slipway.web.dev.test. 0 CLASS255 TXT ", // the owner TXT set removed (class ANY)
		`_slipway.web.dev.test. 300 IN TXT "heritage=slipway,owner=g.front/ns@uid-1,node=web"`,
	}
	if d := cmp.Diff(wantPre, texts(m.Answer)); d != "" {
		t.Errorf("prerequisites (-want +got):\n%s", d)
	}
	if d := cmp.Diff(wantUpd, texts(m.Ns)); d != "" {
		t.Errorf("updates (-want +got):\n%s", d)
	}
	moved := web
	moved.Values = []string{"192.0.2.9"}
	m, err = c.message("dev.test.", Change{Action: Adopt, Set: moved, Seen: seen, Owner: owner})
	if err != nil {
		t.Fatal(err)
	}
	if got := texts(m.Ns); len(got) != 6 || !strings.Contains(strings.Join(got, "\n"), "A 192.0.2.9") {
		t.Errorf("adopt with another address: updates %q; want the records replaced too", got)
	}
}
