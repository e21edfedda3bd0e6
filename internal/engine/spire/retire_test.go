package spire

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

// Issue 43 item 9: the places the state records and the file no longer names are the ones
// retired; the file's own place (whatever its pidFile or host key now) stays.
func TestSpireRetired(t *testing.T) {
	s := &spec.Spire{Server: "spire.example.org:8081", TrustDomain: "example.org", ConfigDir: "/etc/spire",
		PIDFile: "/run/spire.pid", SSH: spec.SSHTarget{User: "spire", Host: "spire.example.org", Port: 22}}
	t0 := lane.Target{Group: &spec.Group{Name: "shop", Spire: s}, Namespace: "shop"}
	here := placeOf(t0)
	samePlace := here
	samePlace.PIDFile = "/run/old.pid"
	oldNS := here
	oldNS.Namespace = "shop-old"
	otherServer := here
	otherServer.Server = "spire2.example.org:8081"
	doc := &state.Document{Spire: []state.SpireRecord{samePlace, oldNS, otherServer}}
	if d := cmp.Diff([]state.SpireRecord{oldNS, otherServer}, retiredPlaces(doc, t0)); d != "" {
		t.Errorf("retired with spire: in the file (-want +got):\n%s", d)
	}
	without := lane.Target{Group: &spec.Group{Name: "shop"}, Namespace: "shop"}
	if d := cmp.Diff(doc.Spire, retiredPlaces(doc, without)); d != "" {
		t.Errorf("retired without spire: (-want +got):\n%s", d)
	}
	if got := retiredPlaces(nil, without); got != nil {
		t.Errorf("retired of no state: %v", got)
	}
	if _, err := specOfRecord(here); err != nil {
		t.Errorf("the file's own record: %v", err)
	}
}

// A state is a file its holders may edit: a recorded place that would reach the spire node's
// shell or a connection unchecked is refused, naming the field.
func TestSpireRecordChecked(t *testing.T) {
	good := state.SpireRecord{Namespace: "shop", Server: "spire.example.org:8081", TrustDomain: "example.org",
		SSH: "spire@spire.example.org:22", ConfigDir: "/etc/spire", PIDFile: "/run/spire.pid"}
	for _, tc := range []struct {
		name string
		edit func(r *state.SpireRecord)
		want string
	}{
		{"a command in configDir", func(r *state.SpireRecord) { r.ConfigDir = "/etc/spire'; touch /tmp/pwned; '" }, "not a clean absolute path"},
		{"a relative pidFile", func(r *state.SpireRecord) { r.PIDFile = "run/spire.pid" }, "not a clean absolute path"},
		{"no ssh user", func(r *state.SpireRecord) { r.SSH = "spire.example.org:22" }, "is not user@host:port"},
		{"a server without port", func(r *state.SpireRecord) { r.Server = "spire.example.org" }, "is not host:port"},
		{"a namespace with a slash", func(r *state.SpireRecord) { r.Namespace = "shop/../x" }, "is not a DNS name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := good
			tc.edit(&r)
			_, err := specOfRecord(r)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error naming %q", err, tc.want)
			}
		})
	}
}
