package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"slipway.dev/slipway/internal/state"
)

// TestStateShowTarget: `state show --target <app>` shows that target's state (<group>-<app>),
// from the group file or --group, also of an app no node names any more (its last node moved).
func TestStateShowTarget(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"shop", "shop-front", "shop-data"} {
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
		noState   bool
		wantErr   string
	}{
		{name: "the group file's group", args: []string{"-f", file}, wantGroup: "shop"},
		{name: "target all", args: []string{"-f", file, "--target", "all"}, wantGroup: "shop"},
		{name: "an app of the group file", args: []string{"-f", file, "--target", "front"}, wantGroup: "shop-front"},
		{name: "an app of --group", args: []string{"--group", "shop", "--target", "data"}, wantGroup: "shop-data"},
		{name: "an app no node has (any more)", args: []string{"-f", file, "--target", "mail"}, wantGroup: "shop-mail", noState: true},
		{name: "a name too long", args: []string{"--group", strings.Repeat("g", 60), "--target", "data"}, wantErr: "is not a DNS label of at most 63 characters"},
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
			if v.Group != tt.wantGroup || (v.State == nil) != tt.noState || (v.State != nil && v.State.Group != tt.wantGroup) {
				t.Errorf("state show %v: group %q, state %+v; want %s", tt.args, v.Group, v.State, tt.wantGroup)
			}
		})
	}
}
