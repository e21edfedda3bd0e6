package ui

import (
	"bytes"
	"strings"
	"testing"

	"slipway.dev/slipway/internal/status"
)

// The published names' lines say whether DNS agrees, and what differs when it does not.
func TestStatusDNS(t *testing.T) {
	s := &status.Group{Group: "demo", Namespace: "demo", Applied: true, Nodes: []status.Node{
		{Node: "web", InFile: true, InState: true, Names: []string{"www.example.org"}, Address: []string{"192.0.2.1"}, DNS: "agrees"},
		{Node: "mx", InFile: true, InState: true, Names: []string{"mx.example.org"}, DNS: "differs: mx.example.org: the node has no address yet"},
		{Node: "db", InFile: true, InState: true},
	}}
	var b bytes.Buffer
	Status(&b, s)
	for _, want := range []string{
		"  web: www.example.org → 192.0.2.1; dns agrees\n",
		"  mx: mx.example.org → no address yet; dns differs: mx.example.org: the node has no address yet\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, b.String())
		}
	}
	section, _, _ := strings.Cut(b.String(), "Last rollouts:")
	if _, names, _ := strings.Cut(section, "Published names:"); strings.Contains(names, "db:") {
		t.Errorf("a node without names is listed under the published names:\n%s", b.String())
	}
}
