package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"slipway.dev/slipway/internal/engine"
	"slipway.dev/slipway/internal/image"
	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/quote"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
	"slipway.dev/slipway/internal/ui"
)

// session is what the verbs that talk to a cluster share: the group, its namespace, the
// cluster, the registry, the state and the engine.
type session struct {
	g       *Globals
	group   *spec.Group
	ns      string
	kube    *kube.Client
	backend state.Backend
	engine  *engine.Engine
	printer ui.Printer
	target  engine.Target
}

// inSession checks --output, runs fn with the session of a verb's run (openSession) and
// closes its printer after: the last one, as a verb may swap it (plan text between two
// views); closing it before is harmless.
func inSession(cmd *cobra.Command, g *Globals, withImages bool, fn func(ctx context.Context, s *session) error) error {
	if err := checkOutput(g); err != nil {
		return err
	}
	ctx := cmd.Context()
	s, err := openSession(ctx, g, withImages, cmd.OutOrStdout(), cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	defer func() { s.printer.Close() }()
	return fn(ctx, s)
}

// needRegistry returns the registry or the error that names K8S_REGISTRY (FR-008) and the
// dev environment's.
func (g *Globals) needRegistry(ctx context.Context) (string, error) {
	r := g.RegistryHost()
	if r == "" {
		return "", noRegistry(ctx)
	}
	return r, nil
}

// defaultNewNodes bounds the nodes deployed for the first time when --parallelism is not
// given: a node with no Deployment yet has nothing to roll back, and at 200 nodes pacing them
// 10 at a time kept the first apply 1.3 × above the cluster's floor (issue 17). Their object
// applies stay 10 at a time (engine.Options.NewNodes).
const defaultNewNodes = 200

// defaultPushes bounds the images pushed at a time when --parallelism is not given. A node's
// objects go as soon as its own images are pushed, so the pushes go fewer at a time than the
// new nodes: the first nodes reach the cluster while the others push (engine.Options.Pushes).
const defaultPushes = 32

// openSession loads the group file and connects. withImages is false for verbs that never
// build or push (destroy, suspend, resume, status).
func openSession(ctx context.Context, g *Globals, withImages bool, stdout, stderr io.Writer) (*session, error) {
	grp, ns, err := loadGroup(g)
	var empty *spec.EmptyTargetError
	if err != nil && (!errors.As(err, &empty) || grp == nil) {
		return nil, err
	}
	s := &session{g: g, group: grp, ns: ns}
	var registry string
	if withImages {
		if registry, err = g.needRegistry(ctx); err != nil {
			return nil, err
		}
		if err := devPublishing(ctx, g, grp); err != nil {
			return nil, err
		}
	}
	if s.kube, err = g.connect(ctx); err != nil {
		return nil, err
	}
	if s.backend, err = openState(ctx, g, grp.Name, stderr); err != nil {
		return nil, err
	}
	if empty != nil {
		// A target no node names any more is one whose last node moved to another app: it
		// goes on while it has a state (its nodes are to be removed); else it is a typo.
		doc, err := s.backend.Read(ctx)
		if err != nil {
			return nil, err
		}
		if doc == nil {
			return nil, empty
		}
	}
	if s.printer = g.printer; s.printer == nil {
		s.printer = newPrinter(g, stdout, stderr)
	}
	o := engine.Options{
		Kube: s.kube, Registry: registry, Parallelism: g.Parallelism, Timeout: g.Timeout,
		Emit: s.printer.Event,
	}
	legacy, err := openLegacyState(ctx, g, grp, stderr)
	if err != nil {
		return nil, err
	}
	// A waves unit that may adopt an earlier release's state reads and relabels the objects of
	// the old key, which the shared reads (keyed by the deployment's) neither hold nor change:
	// it talks to the cluster itself.
	if g.shared != nil && !hasState(ctx, legacy) {
		g.shared.Cover(grp.Name, ns)
		o.Kube, o.SpireKube = g.shared, s.kube
	}
	if !g.parallelismSet {
		o.NewNodes, o.Pushes = defaultNewNodes, defaultPushes
	}
	if withImages {
		opts := g.imageOptions()
		opts.TreeIndex = g.treeIndexPath()
		o.Builder = image.NewBuilder(opts)
		if o.Publisher, err = image.NewPublisher(opts); err != nil {
			return nil, err
		}
	}
	s.engine = engine.New(o)
	s.target = engine.Target{Group: grp, Namespace: ns, Store: s.backend, KeepClaims: g.KeepClaims, NamespaceFrom: g.namespaceSource(grp), MoveNamespace: g.MoveNamespace}
	s.target.Legacy = legacy
	if withImages {
		s.target.Jobs = imageJobs(ctx, grp, registry, ns, stderr)
	}
	return s, nil
}

// newPrinter picks the progress printer: JSON lines on stdout with -o json, a live view on a
// terminal, plain lines otherwise.
func newPrinter(g *Globals, stdout, stderr io.Writer) ui.Printer {
	if g.Output == "json" {
		return ui.NewJSON(stdout)
	}
	if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return ui.NewLive(stderr)
	}
	return ui.NewPlain(stderr)
}

// confirm asks on a terminal unless yes; without a terminal, yes is required (SPEC §2).
func confirm(yes bool, verb, what string, stdin io.Reader, stderr io.Writer) error {
	if yes {
		return nil
	}
	if !readsTerminal(stdin) {
		return fmt.Errorf("%s: no terminal to confirm on: pass --yes to %s", verb, what)
	}
	fmt.Fprintf(stderr, "%s? Only 'yes' is accepted: ", quote.Text(what)) // it names the cluster's objects
	var answer string
	_, _ = fmt.Fscanln(stdin, &answer)
	if answer != "yes" {
		return withExitCode(ExitError, fmt.Errorf("%s: cancelled", verb))
	}
	return nil
}

func checkOutput(g *Globals) error {
	if g.Output != "text" && g.Output != "json" {
		return fmt.Errorf("--output %q: want text or json", g.Output)
	}
	return nil
}

func readsTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// confirmApply asks before a plan with changes is applied. With -o json the plan text is not
// printed (stdout carries JSON), so it goes to stderr first when there is someone to ask.
func confirmApply(g *Globals, yes bool, p *plan.Plan, stdin io.Reader, stderr io.Writer) error {
	if g.Output == "json" && !yes && readsTerminal(stdin) {
		ui.PlanWith(stderr, p, g.planOptions(stderr))
	}
	return confirm(yes, "apply", "Apply these changes to group "+p.Group, stdin, stderr)
}

// hasState reports whether b holds a document (an unreadable one counts: the engine says why).
func hasState(ctx context.Context, b state.Backend) bool {
	if b == nil {
		return false
	}
	d, err := b.Read(ctx)
	return d != nil || err != nil
}
