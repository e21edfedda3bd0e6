package cli

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
)

func TestTargetOf(t *testing.T) {
	grp, err := spec.Load("testdata/targets/slipway.yaml")
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 53)
	tests := []struct {
		name              string
		g                 Globals
		env               map[string]string
		wantNS, wantState string
		wantNodes         []string
		wantErr           string
	}{
		{name: "all by default", wantNS: "shop", wantState: "shop", wantNodes: []string{"cache", "db", "tools", "web"}},
		{name: "all named", g: Globals{Target: "all"}, wantNS: "shop", wantState: "shop", wantNodes: []string{"cache", "db", "tools", "web"}},
		{name: "an app", g: Globals{Target: "front"}, wantNS: "shop-front", wantState: "shop.front", wantNodes: []string{"cache", "web"}},
		{name: "an app with -n", g: Globals{Target: "data", Namespace: "prod"}, wantNS: "prod-data", wantState: "shop.data", wantNodes: []string{"db"}},
		{name: "a deployment id", g: Globals{DeploymentID: "d42"}, wantNS: "shop-d42", wantState: "shop.all.d42", wantNodes: []string{"cache", "db", "tools", "web"}},
		{name: "an app and a deployment id", g: Globals{Target: "front", DeploymentID: "d42"}, wantNS: "shop-front-d42", wantState: "shop.front.d42", wantNodes: []string{"cache", "web"}},
		{name: "the id from the environment", g: Globals{Target: "data"}, env: map[string]string{deploymentIDEnv: "e7"}, wantNS: "shop-data-e7", wantState: "shop.data.e7", wantNodes: []string{"db"}},
		{name: "the flag wins over the environment", g: Globals{DeploymentID: "f1"}, env: map[string]string{deploymentIDEnv: "e7"}, wantNS: "shop-f1", wantState: "shop.all.f1", wantNodes: []string{"cache", "db", "tools", "web"}},
		{name: "an app no node has", g: Globals{Target: "mail"},
			wantErr: `target "mail": no node of group shop (testdata/targets/slipway.yaml) has app "mail"; targets: all, data, front`},
		{name: "too long", g: Globals{Target: "front", DeploymentID: long},
			wantErr: `namespace "shop-front-` + long + `" of target front (namespace shop, deployment id "` + long + `" from --deployment-id) is not a DNS label of at most 63 characters (64)`},
		{name: "63 characters", g: Globals{Namespace: strings.Repeat("n", 58), DeploymentID: "abcd"},
			wantNS: strings.Repeat("n", 58) + "-abcd", wantState: "shop.all.abcd", wantNodes: []string{"cache", "db", "tools", "web"}},
		{name: "64 characters", g: Globals{Namespace: strings.Repeat("n", 59), DeploymentID: "abcd"},
			wantErr: `is not a DNS label of at most 63 characters (64)`},
		{name: "an id that is no label", g: Globals{}, env: map[string]string{deploymentIDEnv: "Bad_ID"},
			wantErr: `deployment id "Bad_ID" (from SLIPWAY_DEPLOYMENT_ID) is not a DNS label`},
		{name: "an id ending in a dash", g: Globals{DeploymentID: "x-"}, wantErr: `deployment id "x-" (from --deployment-id) is not a DNS label`},
		{name: "an id with a dot", g: Globals{Target: "front", DeploymentID: "a.b"}, wantErr: `deployment id "a.b" (from --deployment-id) is not a DNS label`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("K8S_NAMESPACE", "")
			t.Setenv(deploymentIDEnv, "")
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			tg, ns, err := tt.g.targetOf(grp)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var nodes []string
			for _, n := range tg.Nodes {
				nodes = append(nodes, n.Name)
			}
			got := []string{ns, tg.Name, strings.Join(nodes, ",")}
			want := []string{tt.wantNS, tt.wantState, strings.Join(tt.wantNodes, ",")}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("namespace, state, nodes (-want +got):\n%s", d)
			}
		})
	}
}

// TestDeploymentIDRefusedFirst: a namespace too long is refused before the run reads the
// kubeconfig (which does not exist here), so before anything is read or changed.
func TestDeploymentIDRefusedFirst(t *testing.T) {
	long := strings.Repeat("a", 60)
	for _, verb := range [][]string{{"plan"}, {"apply", "--yes"}, {"destroy", "--yes"}, {"status"}, {"suspend", "--yes"}, {"render"}} {
		t.Run(verb[0], func(t *testing.T) {
			err := runRoot(t, []string{deploymentIDEnv + "=" + long}, verb...)
			want := `namespace "settings-` + long + `" of target all`
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("error %v, want one containing %q", err, want)
			}
		})
	}
}

// TestMoveNotes: a node that left a per-app target because its app changed is said to move,
// naming its new target; a node that left the file is not.
func TestMoveNotes(t *testing.T) {
	grp, err := spec.Load("testdata/targets/slipway.yaml")
	if err != nil {
		t.Fatal(err)
	}
	front, err := grp.ForTarget("front")
	if err != nil {
		t.Fatal(err)
	}
	p := &plan.Plan{Namespace: "shop-front", Nodes: []plan.NodePlan{
		{Node: "web"}, {Node: "db", Removed: true}, {Node: "tools", Removed: true, KeptClaims: []plan.Key{{Kind: "PersistentVolumeClaim", Namespace: "shop-front", Name: "tools"}}},
		{Node: "gone", Removed: true},
	}}
	want := []string{
		`node db moved to target data (its app is now data): this plan removes it from namespace shop-front, its claim and /var/lib with it (state.protect stops that; --keep-claims keeps the claim); ` + "`slipway apply --target data`" + ` creates it in its new namespace`,
		`node tools moved to target all (it names no app now): this plan removes it from namespace shop-front, but not its claim, which stays there (--keep-claims); ` + "`slipway apply --target all`" + ` creates it in its new namespace`,
	}
	if d := cmp.Diff(want, moveNotes(p, front)); d != "" {
		t.Errorf("notes (-want +got):\n%s", d)
	}
	if notes := moveNotes(p, grp); notes != nil {
		t.Errorf("target all: notes %v", notes)
	}
}
