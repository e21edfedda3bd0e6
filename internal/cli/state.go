package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"slipway.dev/slipway/internal/quote"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
	"slipway.dev/slipway/internal/ui"
)

func init() { register(newStateCmd) }

// newStateCmd is `slipway state show|list|unlock` (SPEC §2, §8).
func newStateCmd(g *Globals) *cobra.Command {
	var group string
	cmd := &cobra.Command{
		Use:   "state",
		Short: "Show, list and unlock group states",
		Long: "The state records what slipway applied to a group; its lock keeps two runs apart.\n" +
			"The group comes from --group, else from the group file (-f); --target <app> and\n" +
			"--deployment-id name the state of that deployment (<group>.<app>, <group>.<target>.<id>).",
	}
	cmd.PersistentFlags().StringVar(&group, "group", "", "the group (default: the group file's)")
	addTargetFlag(cmd.PersistentFlags(), g)

	// show and list take no argument; they run with the --group given.
	noArgs := func(use, short string, run func(context.Context, *Globals, string, io.Writer, io.Writer) error) *cobra.Command {
		return &cobra.Command{Use: use, Short: short, Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				return run(cmd.Context(), g, group, cmd.OutOrStdout(), cmd.ErrOrStderr())
			}}
	}
	show := noArgs("show", "Print the group's state and its lock, if any", stateShow)
	list := noArgs("list", "List the groups the state backend holds", stateList)
	unlock := &cobra.Command{
		Use:   "unlock LOCK_ID",
		Short: "Remove the group's lock (left by a killed run), printing its holder first",
		Long: "Removes the group's lock if its ID is LOCK_ID (as `state show` prints it), whoever holds\n" +
			"it. Make sure the holder no longer runs: two runs changing one group at once can\n" +
			"leave it in a state neither planned.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return stateUnlock(cmd.Context(), g, group, args[0], cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.AddCommand(show, list, unlock)
	return cmd
}

// stateGroup resolves the key the state is kept under (spec.Identity.Key): --group, else the
// group file's name, with --target <app> and --deployment-id narrowing it to that deployment's
// (`<group>.<app>`, `<group>.<target>.<id>`). With the group file an app no node names any
// more is taken as given too: its last node may have moved to another app, leaving its state.
func stateGroup(g *Globals, flag string) (string, error) {
	id, from := g.DeploymentIDValue()
	if err := spec.CheckDeploymentID(id, from); err != nil {
		return "", err
	}
	if flag != "" {
		if !g.perApp() && id == "" {
			return flag, nil // a group's name, or a key as `state list` prints it
		}
		if !spec.IsDNSLabel(flag) {
			return "", fmt.Errorf("--group %q: not a DNS label: with --target or a deployment id, name the group as its file does", flag)
		}
		if g.perApp() && !spec.IsDNSLabel(g.Target) {
			return "", fmt.Errorf("--target %q: not a DNS label", g.Target)
		}
		return spec.Identity{Group: flag, Target: g.Target, ID: id}.Key(), nil
	}
	grp, err := spec.Load(g.File)
	if err != nil {
		return "", fmt.Errorf("%w (name the group with --group)", err)
	}
	tg, err := grp.ForDeployment(g.Target, id)
	var empty *spec.EmptyTargetError
	if errors.As(err, &empty) {
		return empty.Target.Name, nil // a target whose last node moved away may still have a state
	}
	if err != nil {
		return "", err
	}
	return tg.Name, nil
}

// lockView is the lock as `state show -o json` prints it.
type lockView struct {
	state.Info
	// Process: "running" or "not running" when the holder ran on this host, else "unknown".
	Process string `json:"process"`
}

func liveness(i state.Info) string {
	switch state.HolderLiveness(i) {
	case state.LivenessAlive:
		return "running"
	case state.LivenessDead:
		return "not running"
	}
	return "unknown"
}

// openGroupState opens the state of the group stateGroup names.
func openGroupState(ctx context.Context, g *Globals, flagGroup string, stderr io.Writer) (string, state.Backend, error) {
	group, err := stateGroup(g, flagGroup)
	if err != nil {
		return "", nil, err
	}
	b, err := openState(ctx, g, group, stderr)
	return group, b, err
}

func stateShow(ctx context.Context, g *Globals, flagGroup string, stdout, stderr io.Writer) error {
	group, b, err := openGroupState(ctx, g, flagGroup, stderr)
	if err != nil {
		return err
	}
	doc, err := b.Read(ctx)
	if err != nil {
		return err
	}
	lock, err := b.LockInfo(ctx)
	if err != nil {
		return err
	}
	if doc == nil && lock == nil {
		// Not an empty answer: a wrong --group, --target, --deployment-id or --state looks
		// the same, and a script must not read it as a state with no nodes.
		return fmt.Errorf("state show: no state of %s at %s (nothing applied under that key there, or destroyed): `slipway state list` lists the states there", group, b.Location())
	}
	if g.Output == "json" {
		out := struct {
			Group    string          `json:"group"`
			Location string          `json:"location"`
			State    *state.Document `json:"state"`
			Lock     *lockView       `json:"lock"`
		}{Group: group, Location: b.Location(), State: withoutSecretKey(doc)}
		if lock != nil {
			out.Lock = &lockView{Info: *lock, Process: liveness(*lock)}
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	return ui.PrintState(stdout, stateView(group, b.Location(), doc, lock))
}

// stateView is what `state show` prints of doc and lock.
func stateView(group, where string, doc *state.Document, lock *state.Info) ui.StateView {
	v := ui.StateView{Group: group, Location: where}
	if lock != nil {
		v.Lock = &ui.LockView{Holder: lock.String(), ID: lock.ID, PID: lock.PID, Process: liveness(*lock), Expires: lock.Expires}
	}
	if doc == nil {
		return v
	}
	v.State = &ui.StateDoc{Namespace: doc.Namespace, Serial: doc.Serial, Lineage: doc.Lineage}
	for _, n := range slices.Sorted(maps.Keys(doc.Nodes)) {
		ns := doc.Nodes[n]
		if ns == nil {
			continue
		}
		sn := ui.StateNode{Name: n, MachineID: ns.MachineID, ImageRef: ns.Image.Ref, ImageTag: ns.Image.Tag, Digest: ns.Image.Digest,
			LastRollout: ns.LastRollout, PreviousReady: ns.PreviousReady, Suspended: ns.Suspended, Roles: map[string]int32{}}
		for r, rs := range ns.Roles {
			if rs != nil {
				sn.Roles[r] = rs.Replicas
			}
		}
		v.State.Nodes = append(v.State.Nodes, sn)
	}
	return v
}

func stateList(ctx context.Context, g *Globals, flagGroup string, stdout, stderr io.Writer) error {
	// Listing needs no group: without one, the default file backend lists its directory.
	group := flagGroup
	if group == "" {
		if grp, err := spec.Load(g.File); err == nil {
			group = grp.Name
		}
	}
	// With no group the default file URL names ".slipway/state/.json": its directory is listed.
	b, err := openState(ctx, g, group, stderr)
	if err != nil {
		return err
	}
	l, ok := b.(state.Lister)
	if !ok {
		return fmt.Errorf("state list: the backend %s cannot list groups (the HTTP backend protocol has no listing)", b.Location())
	}
	groups, err := l.List(ctx)
	if err != nil {
		return err
	}
	if g.Output == "json" {
		if groups == nil {
			groups = []string{}
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(groups)
	}
	if len(groups) == 0 {
		// Without a group the file backend's location is "<dir>/.json": name the directory.
		_, err := fmt.Fprintf(stderr, "no group states in %s\n", quote.Line(strings.TrimSuffix(b.Location(), "/.json")))
		return err
	}
	for _, gr := range groups {
		if _, err := fmt.Fprintln(stdout, listLine(gr)); err != nil {
			return err
		}
	}
	return nil
}

// listLine is a key as `state list` prints it: a plain group's key alone, as before; a
// deployment's with what it is (group, target, deployment id), as its key only encodes it.
func listLine(key string) string {
	id, ok := spec.ParseKey(key)
	if !ok || (!id.PerApp() && id.ID == "") {
		return quote.Line(key) // a backend's listing: anyone's names
	}
	return key + "\t" + id.String()
}

func stateUnlock(ctx context.Context, g *Globals, flagGroup, id string, stdout, stderr io.Writer) error {
	group, b, err := openGroupState(ctx, g, flagGroup, stderr)
	if err != nil {
		return err
	}
	holder, err := b.LockInfo(ctx)
	if err != nil {
		return err
	}
	if holder == nil {
		return fmt.Errorf("state %s: unlock %s: %w", group, id, state.ErrNotLocked)
	}
	if holder.ID != id {
		return &state.LockIDError{Group: group, ID: id, Holder: *holder}
	}
	fmt.Fprintf(stdout, "State %s was locked by %s\n", group, holder)
	if liveness(*holder) == "running" {
		fmt.Fprintf(stderr, "warning: process %d of the holder still runs on this host\n", holder.PID)
	}
	if err := b.Unlock(ctx, id); err != nil {
		if errors.Is(err, state.ErrNotLocked) {
			return fmt.Errorf("state %s: the lock went away before the unlock: %w", group, err)
		}
		return err
	}
	_, err = fmt.Fprintf(stdout, "State %s unlocked.\n", group)
	return err
}

// secretKeyShown is what `state show -o json` prints for the group's secret key.
const secretKeyShown = "(set, not shown)"

// withoutSecretKey is doc with its secret key replaced by secretKeyShown: with the key, a
// guess of a secret value can be tested against the hashes plans and Deployments show
// (issue 35 item 5).
func withoutSecretKey(doc *state.Document) *state.Document {
	if doc == nil || doc.SecretKey == "" {
		return doc
	}
	cp := *doc
	cp.SecretKey = secretKeyShown
	return &cp
}
