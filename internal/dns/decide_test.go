package dns

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDecide(t *testing.T) {
	const owner = "g/ns@uid-1"
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
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ce := Decide(c.want, "web.dev.test", KindAddress, c.seen, owner)
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
