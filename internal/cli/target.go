package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"

	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

// deploymentIDEnv is the environment variable of --deployment-id. The reference names no
// variable of its own for the id (FR-021: the id the API gives), so it is slipway's, beside
// SLIPWAY_STATE.
const deploymentIDEnv = "SLIPWAY_DEPLOYMENT_ID"

// addTargetFlag adds --target to a verb that deploys, reads or changes one target of a group.
func addTargetFlag(f *pflag.FlagSet, g *Globals) {
	f.StringVar(&g.Target, "target", spec.TargetAll, "`all` nodes into the group's namespace, or one app's nodes into <namespace>-<app>, with a state and lock of its own")
}

// addKeepClaimsFlag adds --keep-claims to plan and apply: the claims of the nodes the run
// removes (gone from the file, or moved to another target) stay, as destroy --keep-claims
// keeps every claim.
func addKeepClaimsFlag(f *pflag.FlagSet, g *Globals) {
	f.BoolVar(&g.KeepClaims, "keep-claims", false, "keep the claims (each node's /var/lib) of the nodes removed: gone from the file, or moved to another target as their app changed; their other objects go")
}

// DeploymentIDValue resolves --deployment-id > SLIPWAY_DEPLOYMENT_ID; "" appends nothing.
func (g *Globals) DeploymentIDValue() (id, from string) {
	if g.DeploymentID != "" {
		return g.DeploymentID, "--deployment-id"
	}
	return os.Getenv(deploymentIDEnv), deploymentIDEnv
}

// perApp reports whether the run deploys one app's nodes rather than every node.
func (g *Globals) perApp() bool { return g.Target != "" && g.Target != spec.TargetAll }

// targetOf narrows grp to the run's deployment (target and deployment id: its Name becomes
// the deployment's key, spec.Identity) and gives its namespace: the group's namespace (SPEC
// §2), `-<app>` for a per-app target (FR-007), then `-<id>` for a deployment id (FR-021). An
// id or a namespace that is not a DNS label of at most 63 characters is refused here, before
// anything is read or changed, naming where it came from.
func (g *Globals) targetOf(grp *spec.Group) (*spec.Group, string, error) {
	id, from := g.DeploymentIDValue()
	if err := spec.CheckDeploymentID(id, from); err != nil {
		return nil, "", err
	}
	base, err := g.namespaceOf(grp)
	if err != nil {
		return nil, "", err
	}
	tg, err := grp.ForDeployment(g.Target, id)
	var empty *spec.EmptyTargetError
	if errors.As(err, &empty) {
		tg = empty.Target // returned with err: openSession goes on when its state exists
	} else if err != nil {
		return nil, "", err
	}
	ns := base
	if g.perApp() {
		ns += "-" + g.Target
	}
	if id != "" {
		ns += "-" + id
	}
	if !spec.IsDNSLabel(ns) {
		return nil, "", fmt.Errorf("namespace %q of target %s (namespace %s%s) is not a DNS label of at most 63 characters (%d): lowercase letters, digits and '-', starting and ending with a letter or digit",
			ns, g.targetName(), base, idNote(id, from), len(ns))
	}
	return tg, ns, err
}

func idNote(id, from string) string {
	if id == "" {
		return ""
	}
	return fmt.Sprintf(", deployment id %q from %s", id, from)
}

// namespaceSource says where the run's namespace came from, for a refusal that names it:
// the flag or variable or file that set the group's namespace, and the target and deployment
// id that lengthened it.
func (g *Globals) namespaceSource(grp *spec.Group) string {
	from := "the group's name"
	switch {
	case g.Namespace != "":
		from = "-n"
	case os.Getenv("K8S_NAMESPACE") != "":
		from = "K8S_NAMESPACE"
	case grp.Namespace != "":
		from = "the file's namespace"
	}
	if g.perApp() {
		from += ", target " + g.Target
	}
	if id, idFrom := g.DeploymentIDValue(); id != "" {
		from += ", deployment id " + id + " from " + idFrom
	}
	return from
}

// addMoveFlag adds --move-namespace to plan and apply.
func addMoveFlag(f *pflag.FlagSet, g *Globals) {
	f.BoolVar(&g.MoveNamespace, "move-namespace", false, "move the group from the namespace its state records to this run's: made anew here, its objects there but the claims deleted once every node runs ready")
}

// targetName is the run's target as the operator wrote it.
func (g *Globals) targetName() string {
	if g.perApp() {
		return g.Target
	}
	return spec.TargetAll
}

// moveNotes say, for a per-app target's plan, which of the nodes it removes have moved to
// another target of the group (their app changed): the plan removes them from this target's
// namespace, claim included, and the apply of their new target creates them there.
func moveNotes(p *plan.Plan, grp *spec.Group) []string {
	if grp.Whole == nil {
		return nil
	}
	var notes []string
	for _, np := range p.Nodes {
		n := grp.Whole.Node(np.Node)
		if !np.Removed || n == nil {
			continue
		}
		to, why := cmp.Or(n.App, spec.TargetAll), fmt.Sprintf("its app is now %s", n.App)
		if n.App == "" {
			why = "it names no app now"
		}
		claim := "its claim and /var/lib with it (state.protect stops that; --keep-claims keeps the claim)"
		if len(np.KeptClaims) > 0 {
			claim = "but not its claim, which stays there (--keep-claims)"
		}
		notes = append(notes, fmt.Sprintf("node %s moved to target %s (%s): this plan removes it from namespace %s, %s; `slipway apply --target %s` creates it in its new namespace",
			np.Node, to, why, p.Namespace, claim, to))
	}
	return notes
}

// openLegacyState opens the state of the key an earlier release gave the per-app target grp
// (`<group>-<app>`), which the engine adopts when it was written for the target (issue 46);
// nil when grp is no per-app target, or that key's state is the same one as grp's (one file
// or one HTTP address named by --state: the document there names its group, and is refused
// as another group's).
func openLegacyState(ctx context.Context, g *Globals, grp *spec.Group, stderr io.Writer) (state.Backend, error) {
	id := grp.Ident()
	old := id.LegacyKey()
	if !id.PerApp() || old == grp.Name {
		return nil, nil
	}
	if url := g.StateURL(grp.Name); url == g.StateURL(old) && !isKubeURL(url) {
		return nil, nil
	}
	return openState(ctx, g, old, stderr)
}
