package engine

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

// TestCheckNamespace (issue 35 item 6): a state that records another namespace than the run's
// is refused, naming both and where the run's came from, unless the run moves the group; a
// state without one (written before slipway recorded it) is not.
func TestCheckNamespace(t *testing.T) {
	g := &spec.Group{Name: "demo"}
	for _, tc := range []struct {
		name    string
		doc     *state.Document
		move    bool
		refused bool
	}{
		{name: "no state", doc: nil},
		{name: "a state without a namespace", doc: &state.Document{Group: "demo"}},
		{name: "the same namespace", doc: &state.Document{Group: "demo", Namespace: "b"}},
		{name: "another namespace", doc: &state.Document{Group: "demo", Namespace: "a"}, refused: true},
		{name: "another namespace, moved", doc: &state.Document{Group: "demo", Namespace: "a"}, move: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := lane.CheckNamespace(tc.doc, Target{Group: g, Namespace: "b", Store: &memStore{}, NamespaceFrom: "K8S_NAMESPACE", MoveNamespace: tc.move}.lent())
			if !tc.refused {
				if err != nil {
					t.Fatalf("checkNamespace = %v, want nil", err)
				}
				return
			}
			var ne *NamespaceError
			if !errors.As(err, &ne) {
				t.Fatalf("checkNamespace = %v, want a *NamespaceError", err)
			}
			for _, want := range []string{"group demo: the state (mem://test) records namespace a, but this run's namespace is b (from K8S_NAMESPACE)", "nothing was changed", "Run it with namespace a", "slipway apply --move-namespace"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
		})
	}
}

// TestDestroyRefusesAnotherNamespace: destroy of a namespace the state does not record
// deletes nothing there and keeps the state; nor does destroy go on while a move is not
// finished.
func TestDestroyRefusesAnotherNamespace(t *testing.T) {
	for _, tc := range []struct {
		name string
		doc  state.Document
		want string
	}{
		{name: "another namespace", doc: state.Document{Group: "demo", Namespace: "a"}, want: "records namespace a, but this run's namespace is b"},
		{name: "a move not finished", doc: state.Document{Group: "demo", Namespace: "b", MovedFrom: "a"}, want: "its move from namespace a to b is not finished"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeCluster()
			store := &memStore{Doc: &tc.doc}
			_, err := New(Options{Kube: f}).Destroy(context.Background(), Target{Group: &spec.Group{Name: "demo"}, Namespace: "b", Store: store}, DestroyOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("destroy = %v, want a refusal with %q", err, tc.want)
			}
			if d := cmp.Diff([]string(nil), f.Calls()); d != "" {
				t.Errorf("calls (-want +got):\n%s", d)
			}
			if store.Doc == nil || store.Writes != 0 {
				t.Errorf("the state after a refused destroy: %+v, %d writes", store.Doc, store.Writes)
			}
		})
	}
}
