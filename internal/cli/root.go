// Package cli builds slipway's command tree: one file per verb. It parses flags, resolves the
// global settings (flag > environment > group file > default, SPEC §2) and hands the work to
// the engine and the printers; it holds no deployment logic of its own.
package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"slipway.dev/slipway/internal/engine"
	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
	"slipway.dev/slipway/internal/ui"
)

// Exit codes of SPEC §2.
const (
	ExitOK      = 0
	ExitError   = 1
	ExitChanges = 2
	ExitLocked  = 3
)

// ExitError carries an exit code other than 1 up to main. An empty message prints nothing.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

// withExitCode wraps err so that main exits with code.
func withExitCode(code int, err error) error { return &exitError{code: code, err: err} }

// exitClassifiers map typed errors to exit codes (lock.go registers LockError → 3), so this
// file need not know every package's errors.
var exitClassifiers []func(error) (int, bool)

// ExitCode maps an error returned by the command tree to the process exit code.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	for _, c := range exitClassifiers {
		if code, ok := c(err); ok {
			return code
		}
	}
	return ExitError
}

// Globals holds the global flags of SPEC §2 after parsing.
type Globals struct {
	File             string
	Kubeconfig       string
	Context          string
	Registry         string
	RegistryAuth     string
	InsecureRegistry bool
	Namespace        string
	State            string
	Timeout          time.Duration
	Parallelism      int
	parallelismSet   bool // --parallelism given: it bounds new nodes and pushes too
	Output           string
	NoColor          bool
	StateTimeout     time.Duration
	Target           string              // --target of the verbs that take it: spec.TargetAll or an app
	DeploymentID     string              // --deployment-id: appended to every target's namespace (FR-021)
	KeepClaims       bool                // --keep-claims of plan and apply: the claims of the nodes removed stay
	MoveNamespace    bool                // --move-namespace of plan and apply (issue 35 item 6)
	kube             *kube.Client        // the cluster connection a waves run shares between its groups
	shared           *engine.SharedReads // a waves run's reads of every group at once, when it shares them
	printer          ui.Printer          // a waves run's one printer, which the sessions of its groups share
}

// KubeconfigSource resolves --kubeconfig > KUBE_CONFIG_PATH > KUBECONFIG > ~/.kube/config. The flag
// and KUBE_CONFIG_PATH name one file; KUBECONFIG is a list merged as kubectl merges it.
func (g *Globals) KubeconfigSource() kube.Kubeconfig {
	if g.Kubeconfig != "" {
		return kube.Kubeconfig{Explicit: g.Kubeconfig}
	}
	if v := os.Getenv("KUBE_CONFIG_PATH"); v != "" {
		return kube.Kubeconfig{Explicit: v}
	}
	if v := os.Getenv("KUBECONFIG"); v != "" {
		var files []string
		for _, f := range filepath.SplitList(v) {
			if f != "" {
				files = append(files, f)
			}
		}
		if len(files) > 0 {
			return kube.Kubeconfig{Precedence: files}
		}
	}
	home, _ := os.UserHomeDir()
	return kube.Kubeconfig{Explicit: filepath.Join(home, ".kube", "config")}
}

// RegistryHost resolves --registry > K8S_REGISTRY; empty means unset.
func (g *Globals) RegistryHost() string {
	if g.Registry != "" {
		return g.Registry
	}
	return os.Getenv("K8S_REGISTRY")
}

// RegistryAuthFile resolves --registry-auth > REGISTRY_AUTH_FILE > ~/.docker/config.json.
func (g *Globals) RegistryAuthFile() string {
	if g.RegistryAuth != "" {
		return g.RegistryAuth
	}
	if v := os.Getenv("REGISTRY_AUTH_FILE"); v != "" {
		return v
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".docker", "config.json")
}

// NamespaceFor resolves -n > K8S_NAMESPACE > the file's namespace > the group's name.
func (g *Globals) NamespaceFor(fileNamespace, group string) string {
	switch {
	case g.Namespace != "":
		return g.Namespace
	case os.Getenv("K8S_NAMESPACE") != "":
		return os.Getenv("K8S_NAMESPACE")
	case fileNamespace != "":
		return fileNamespace
	}
	return group
}

// StateURL resolves --state > SLIPWAY_STATE > file://.slipway/state/<group>.json.
func (g *Globals) StateURL(group string) string {
	if g.State != "" {
		return g.State
	}
	if v := os.Getenv("SLIPWAY_STATE"); v != "" {
		return v
	}
	return "file://" + filepath.Join(".slipway", "state", group+".json")
}

// NewRoot returns the slipway command tree.
func NewRoot() *cobra.Command {
	g := &Globals{}
	root := &cobra.Command{
		Use:           "slipway",
		Short:         "Deploy a group of machine-like nodes to Kubernetes, safely",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return g.checkFlags(cmd)
		},
	}
	f := root.PersistentFlags()
	f.StringVarP(&g.File, "file", "f", "slipway.yaml", "the group file")
	f.StringVar(&g.Kubeconfig, "kubeconfig", "", "kubeconfig file (env KUBE_CONFIG_PATH, then KUBECONFIG, a list of files merged as kubectl merges it; default ~/.kube/config)")
	f.StringVar(&g.Context, "context", "", "kubeconfig context (default: its current context)")
	f.StringVar(&g.Registry, "registry", "", "OCI registry host[:port][/path] for node images (env K8S_REGISTRY)")
	f.StringVar(&g.RegistryAuth, "registry-auth", "", "docker config file with registry credentials (env REGISTRY_AUTH_FILE; default ~/.docker/config.json)")
	f.BoolVar(&g.InsecureRegistry, "insecure-registry", false, "allow plain HTTP to a non-loopback registry")
	f.StringVarP(&g.Namespace, "namespace", "n", "", "namespace of the group (env K8S_NAMESPACE; default the file's namespace, else the group name)")
	f.StringVar(&g.State, "state", "", "state backend URL: file://PATH, kubernetes://NAMESPACE, http(s)://… (env SLIPWAY_STATE)")
	f.DurationVar(&g.StateTimeout, "state-timeout", state.DefaultRequestTimeout, "time limit of each request to an HTTP state server (0: none)")
	f.DurationVar(&g.Timeout, "timeout", 0, "rollout time limit of a node, overriding the file's rolloutTimeout (default "+spec.DefaultRolloutTimeout.String()+")")
	f.IntVar(&g.Parallelism, "parallelism", 10, "nodes handled at a time; when not given, nodes deployed for the first time go "+strconv.Itoa(defaultNewNodes)+" at a time, pushes "+strconv.Itoa(defaultPushes))
	f.StringVarP(&g.Output, "output", "o", "text", "output format: text or json")
	f.BoolVar(&g.NoColor, "no-color", false, "no colours in the plan on a terminal (also env NO_COLOR)")
	f.StringVar(&g.DeploymentID, "deployment-id", "", "the deployment of the target: a state, lock and objects of its own, and -<id> appended to its namespace (env "+deploymentIDEnv+")")

	root.AddCommand(newVersionCmd(), newCompletionCmd(root), newDevCmd(g))
	for _, add := range commandAdders {
		root.AddCommand(add(g))
	}
	return root
}

// commandAdders lets each verb's file register itself, so adding a verb touches one file.
var commandAdders []func(*Globals) *cobra.Command

func register(f func(*Globals) *cobra.Command) { commandAdders = append(commandAdders, f) }
