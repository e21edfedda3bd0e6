package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"slipway.dev/slipway/internal/state"
)

// TestStateShowTarget: `state show --target <app> --deployment-id <id>` shows that
// deployment's state (<group>.<app>, <group>.<target>.<id>), from the group file or --group,
// also of an app no node names any more (its last node moved); a group named like a target
// (`shop-front`) has a state of its own (issue 46).
func TestStateShowTarget(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"shop", "shop.front", "shop.data", "shop.all.x7", "shop-front"} {
		b, err := state.Open(context.Background(), "file://"+filepath.Join(dir, name+".json"), name, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Write(context.Background(), &state.Document{Group: name, Namespace: name}); err != nil {
			t.Fatal(err)
		}
	}
	file := "testdata/targets/slipway.yaml"
	tests := []struct {
		name      string
		args      []string
		wantGroup string
		wantErr   string
	}{
		{name: "the group file's group", args: []string{"-f", file}, wantGroup: "shop"},
		{name: "target all", args: []string{"-f", file, "--target", "all"}, wantGroup: "shop"},
		{name: "an app of the group file", args: []string{"-f", file, "--target", "front"}, wantGroup: "shop.front"},
		{name: "a group named like the target", args: []string{"--group", "shop-front"}, wantGroup: "shop-front"},
		{name: "an app of --group", args: []string{"--group", "shop", "--target", "data"}, wantGroup: "shop.data"},
		{name: "a deployment id", args: []string{"--group", "shop", "--deployment-id", "x7"}, wantGroup: "shop.all.x7"},
		{name: "a deployment id from the group file", args: []string{"-f", file, "--target", "all", "--deployment-id", "x7"}, wantGroup: "shop.all.x7"},
		{name: "an app no node has (any more)", args: []string{"-f", file, "--target", "mail"}, wantGroup: "shop.mail", wantErr: "state show: no state of shop.mail at file://"},
		{name: "a group that is no label", args: []string{"--group", "shop.x", "--target", "data"}, wantErr: `--group "shop.x": not a DNS label`},
		{name: "an id that is no label", args: []string{"--group", "shop", "--deployment-id", "X7"}, wantErr: `deployment id "X7" (from --deployment-id) is not a DNS label`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("SLIPWAY_STATE", "")
			args := append([]string{"state", "show", "-o", "json"}, tt.args...)
			// Each state is a file named after its group: the default URL's layout.
			group := tt.wantGroup
			if group == "" {
				group = "none"
			}
			args = append(args, "--state", "file://"+filepath.Join(dir, group+".json"))
			out, _, err := runCLI(t, args...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var v struct {
				Group string          `json:"group"`
				State *state.Document `json:"state"`
			}
			if err := json.Unmarshal([]byte(out), &v); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if v.Group != tt.wantGroup || v.State == nil || (v.State != nil && v.State.Group != tt.wantGroup) {
				t.Errorf("state show %v: group %q, state %+v; want %s", tt.args, v.Group, v.State, tt.wantGroup)
			}
		})
	}
}

// TestStateListDeployments: `state list` names each deployment's group, target and id beside
// its key; a plain group's line is its name alone.
func TestStateListDeployments(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"shop", "shop.front", "shop.front.x7", "shop.all.x7", "shop-front"} {
		b, err := state.Open(context.Background(), "file://"+filepath.Join(dir, name+".json"), name, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Write(context.Background(), &state.Document{Group: name, Namespace: "n"}); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("SLIPWAY_STATE", "")
	out, _, err := runCLI(t, "state", "list", "--state", "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	want := "shop\nshop-front\nshop.all.x7\tgroup shop, deployment id x7\nshop.front\tgroup shop, target front\nshop.front.x7\tgroup shop, target front, deployment id x7\n"
	if out != want {
		t.Errorf("state list:\n%s\nwant:\n%s", out, want)
	}
}
