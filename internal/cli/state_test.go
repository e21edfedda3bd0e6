package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/state"
	"slipway.dev/slipway/internal/testkit"
	"slipway.dev/slipway/internal/ui"
)

// TestStateShowText is `state show`'s text: the lock (none, a dead holder whose lease expired,
// a live one whose lease runs), then the state (none, no nodes, nodes with an image by tag and
// digest, a rollback, suspension and roles), as testdata/state-show.txt holds it.
func TestStateShowText(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	past := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	future := time.Date(2100, 1, 2, 3, 4, 5, 0, time.UTC)
	created := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	// A PID above any pid_max: no process has it.
	dead := &state.Info{ID: "lock-1", Operation: "apply", Who: "alice@" + host, Created: created, PID: 1 << 30, Expires: past}
	alive := &state.Info{ID: "lock-2", Operation: "destroy", Who: "bob@" + host, Created: created, PID: os.Getpid(), Expires: future}
	elsewhere := &state.Info{ID: "lock-3", Operation: "apply", Who: "carol@elsewhere.invalid", Created: created, PID: 7}
	doc := &state.Document{Namespace: "demo", Serial: 7, Lineage: "lin-1", Nodes: map[string]*state.NodeState{
		"web": {MachineID: "m-web", Image: state.ImageRecord{Ref: "reg/demo/web", Tag: "c-1", Digest: "sha256:0123456789abcdef0123"},
			LastRollout: &event.Rollout{Result: event.RolloutReady, Time: created},
			Roles:       map[string]*state.RoleState{"worker": {Replicas: 2}, "cron": {Replicas: 0}, "gone": nil}},
		"db": {MachineID: "m-db", Image: state.ImageRecord{Ref: "reg/demo/db", Digest: "md5:short"},
			PreviousReady: "reg/demo/db@sha256:aaaa",
			LastRollout:   &event.Rollout{Result: event.RolloutRolledBack, Time: created}, Suspended: true},
		"new":   {MachineID: "m-new", Image: state.ImageRecord{Ref: "reg/demo/new"}},
		"blank": nil,
	}}
	var out bytes.Buffer
	for _, c := range []struct {
		doc  *state.Document
		lock *state.Info
	}{
		{nil, nil},
		{&state.Document{Namespace: "demo", Serial: 1, Lineage: "lin-0"}, dead},
		{doc, alive},
		{doc, elsewhere},
	} {
		if err := ui.PrintState(&out, stateView("demo", "file:///tmp/demo.json", c.doc, c.lock)); err != nil {
			t.Fatal(err)
		}
		out.WriteString("----\n")
	}
	got := bytes.ReplaceAll(out.Bytes(), []byte(host), []byte("HOST"))
	for _, around := range []string{" %d ", " %d)"} { // this process's PID differs by run
		got = bytes.ReplaceAll(got, fmt.Appendf(nil, around, os.Getpid()), fmt.Appendf(nil, strings.Replace(around, "%d", "%s", 1), "PID"))
	}
	testkit.Golden(t, filepath.Join("testdata", "state-show.txt"), got)
}

// TestStateShowHidesSecretKey (issue 35 item 5): `state show`, text or JSON, never prints the
// group's secret key, and says in JSON that one is set.
func TestStateShowHidesSecretKey(t *testing.T) {
	url, b := fileState(t)
	const key = "c2VjcmV0LWtleS1zZWNyZXQta2V5LXNlY3JldC1rZXk="
	if err := b.Write(context.Background(), &state.Document{Group: "demo", Namespace: "demo", SecretKey: key}); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{}, {"-o", "json"}} {
		out, stderr, err := runCLI(t, append([]string{"state", "show", "--group", "demo", "--state", url}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out+stderr, key) {
			t.Errorf("state show %v prints the secret key:\n%s", args, out)
		}
		if len(args) > 0 && !strings.Contains(out, `"secretKey": "`+secretKeyShown+`"`) {
			t.Errorf("state show -o json does not say a secret key is set:\n%s", out)
		}
	}
}

// TestStateShowNoState: `state show` of a key with no state and no lock at the location is an
// error (exit 1), text or JSON, naming the key and the location looked at: a wrong --group,
// --target or --state is not a state with no nodes.
func TestStateShowNoState(t *testing.T) {
	url, _ := fileState(t)
	for _, args := range [][]string{{"--group", "demo"}, {"--group", "demo", "--target", "front"}, {"--group", "demo", "-o", "json"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			key := "demo"
			if slices.Contains(args, "front") {
				key = "demo.front"
			}
			out, _, err := runCLI(t, append([]string{"state", "show", "--state", url}, args...)...)
			if err == nil || ExitCode(err) != ExitError {
				t.Fatalf("state show %v: error %v (exit %d), output %q; want exit %d", args, err, ExitCode(err), out, ExitError)
			}
			if want := "no state of " + key + " at file://" + strings.TrimPrefix(url, "file://"); !strings.Contains(err.Error(), want) {
				t.Errorf("error %q: want it to name the key and the location (%q)", err, want)
			}
			if out != "" {
				t.Errorf("state show printed %q beside its error", out)
			}
		})
	}
}
