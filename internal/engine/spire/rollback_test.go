package spire

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"slipway.dev/slipway/internal/plan"
)

// failingCreate is the server stand-in whose CreateEntries makes the first entry and then
// fails, as a registration API that errs half-way through a batch.
type failingCreate struct{ *standinServer }

func (s failingCreate) CreateEntries(ctx context.Context, es []plan.SpireEntryDef) error {
	if err := s.standinServer.CreateEntries(ctx, es[:1]); err != nil {
		return err
	}
	return errors.New("rpc error: code = Internal desc = datastore is locked")
}

// unreachableAfter is the spire node stand-in that answers its first n sessions, then is
// unreachable.
type unreachableAfter struct {
	*standinNode
	n int
}

func (u *unreachableAfter) Run(ctx context.Context, script string) (string, error) {
	if u.n <= 0 {
		return "", errors.New("dial tcp 192.0.2.7:22: connect: no route to host")
	}
	u.n--
	return u.standinNode.Run(ctx, script)
}

// Issue 43 item 9: a sync that fails part-way takes back what it created (the rights, the
// kubeconfig and allow files on the spire node, the entries) and leaves what was there before;
// the next plan makes it all again.
func TestLaneFailedSyncRollsBack(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		setup func(f *fixture)
		want  string // in the error
		files bool   // the spire node's files could be taken back
	}{
		{"the server fails to create the entries", func(f *fixture) {
			f.lane.Server = failingCreate{f.server}
		}, "datastore is locked", true},
		{"the spire node is unreachable after the rights were made", func(f *fixture) {
			f.lane.Node = &unreachableAfter{standinNode: f.node, n: 0}
		}, "no route to host", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, "api")
			cluster := uid + "-demo"
			// Another deployment's parts on the same server stay whatever happens.
			f.cluster.rights["other"] = true
			otherEntry := plan.SpireEntryDef{ID: "slipway." + cluster + ".other.host.x", SPIFFEID: "spiffe://example.org/host/" + cluster + "/x"}
			f.server.entries[otherEntry.ID] = otherEntry
			p, err := f.lane.Plan(ctx)
			if err != nil {
				t.Fatal(err)
			}
			tc.setup(f)
			err = f.lane.Apply(ctx, p.Changes)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("apply: %v, want an error naming %q", err, tc.want)
			}
			if f.cluster.rights["demo"] || !f.cluster.rights["other"] {
				t.Errorf("rights after the failed sync: %v, want other's alone", f.cluster.rights)
			}
			if len(f.server.entries) != 1 || f.server.entries[otherEntry.ID].ID == "" {
				t.Errorf("entries after the failed sync: %v, want other's alone", f.server.entries)
			}
			if tc.files {
				if _, err := os.Stat(filepath.Join(f.conf, "k8s_psat.d", cluster, "demo.kubeconfig")); !os.IsNotExist(err) {
					t.Errorf("the kubeconfig after the failed sync: %v, want gone", err)
				}
				if _, err := os.Stat(filepath.Join(f.conf, "k8s_psat.d", cluster, "demo.allow")); !os.IsNotExist(err) {
					t.Errorf("the allow list after the failed sync: %v, want gone", err)
				}
				if hcl, _ := os.ReadFile(filepath.Join(f.conf, "k8s_psat.hcl")); strings.Contains(string(hcl), "demo:node-api") {
					t.Errorf("k8s_psat.hcl still allows demo:node-api:\n%s", hcl)
				}
			} else if !strings.Contains(err.Error(), "taking back what the failed sync made") {
				t.Errorf("apply: %v, want it to say what it could not take back", err)
			}
			// The next run converges: the same plan as the first, made in full.
			f.lane.Server, f.lane.Node = f.server, f.node
			again, err := f.lane.Plan(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if d := changesDiff(p.Changes, again.Changes); d != "" {
				t.Errorf("plan after the rollback: %s", d)
			}
			if err := f.lane.Apply(ctx, again.Changes); err != nil {
				t.Fatal(err)
			}
			if last, err := f.lane.Plan(ctx); err != nil || len(last.Changes) != 0 {
				t.Errorf("plan after the apply that converged: %v, %v", last, err)
			}
		})
	}
}

// Issue 43 item 9: a retirement that stops part-way (the spire node gone after the entries
// were read) is planned again in full by the next run, which converges; a third plans nothing.
func TestLaneRetireConverges(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, "api", "web")
	p, err := f.lane.Plan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.lane.Apply(ctx, p.Changes); err != nil {
		t.Fatal(err)
	}
	// The lane of the state's record: the same place, no nodes (the file has no spire:).
	retire := *f.lane
	retire.Nodes, retire.PodLabels = nil, nil
	first, err := retire.PlanDestroy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	retire.Node = &unreachableAfter{standinNode: f.node, n: 0}
	if err := retire.Apply(ctx, first); err == nil {
		t.Fatal("retire with the spire node unreachable: no error")
	}
	retire.Node = f.node
	again, err := retire.PlanDestroy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := changesDiff(first, again); d != "" {
		t.Errorf("the next run's retirement: %s", d)
	}
	if err := retire.Apply(ctx, again); err != nil {
		t.Fatal(err)
	}
	if last, err := retire.PlanDestroy(ctx); err != nil || len(last) != 0 {
		t.Errorf("after the retirement: %v, %v; want nothing left", last, err)
	}
	if len(f.server.entries) != 0 || len(f.cluster.rights) != 0 {
		t.Errorf("left: entries %v, rights %v", f.server.entries, f.cluster.rights)
	}
	if _, err := os.Stat(filepath.Join(f.conf, "k8s_psat.d", uid+"-demo")); !os.IsNotExist(err) {
		t.Errorf("the cluster's directory on the spire node: %v, want gone", err)
	}
}
