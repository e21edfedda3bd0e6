package cli

import (
	"fmt"
	"os"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/spf13/cobra"

	"slipway.dev/slipway/internal/spec"
)

// checkFlags refuses global flags no run can honour, before any work: a pflag duration or int
// takes a negative value as readily as a positive one.
func (g *Globals) checkFlags(cmd *cobra.Command) error {
	if f := cmd.Flag("timeout"); f != nil && f.Changed && g.Timeout <= 0 {
		return fmt.Errorf("--timeout %s: must be more than 0 (leave it out for each node's rolloutTimeout)", f.Value)
	}
	if g.Parallelism < 1 {
		return fmt.Errorf("--parallelism %d: must be at least 1", g.Parallelism)
	}
	if f := cmd.Flag("parallelism"); f != nil && f.Changed {
		g.parallelismSet = true
	}
	return nil
}

// registrySetting is the registry and the flag or variable it came from ("" when unset).
func (g *Globals) registrySetting() (value, from string) {
	if g.Registry != "" {
		return g.Registry, "--registry"
	}
	return os.Getenv("K8S_REGISTRY"), "K8S_REGISTRY"
}

// checkRegistry refuses a registry that is not host[:port][/path], naming where it was set: the
// image library's own message speaks of its API, not of slipway's settings.
func (g *Globals) checkRegistry() error {
	r, from := g.registrySetting()
	if r == "" {
		return nil
	}
	if i := strings.Index(r, "://"); i >= 0 {
		return fmt.Errorf("%s %q: want host[:port][/path] without a scheme, e.g. %s (plain HTTP is used for loopback registries, or with --insecure-registry)", from, r, r[i+3:])
	}
	if _, err := name.NewRepository(strings.TrimSuffix(r, "/")+"/x", name.StrictValidation); err != nil {
		return fmt.Errorf("%s %q: not a registry host[:port][/path] (lowercase path, e.g. registry.example:5000/team)", from, r)
	}
	return nil
}

// registryAuthSetting is the flag or variable that named the registry auth file; "" when it
// is the default path, which may be missing (anonymous access).
func (g *Globals) registryAuthSetting() string {
	switch {
	case g.RegistryAuth != "":
		return "--registry-auth"
	case os.Getenv("REGISTRY_AUTH_FILE") != "":
		return "REGISTRY_AUTH_FILE"
	}
	return ""
}

// namespaceOf resolves the group's namespace and refuses one from -n or K8S_NAMESPACE that is
// not a DNS label (the file's own was checked when it loaded), naming where it came from.
func (g *Globals) namespaceOf(grp *spec.Group) (string, error) {
	ns := g.NamespaceFor(grp.Namespace, grp.Name)
	if spec.IsDNSLabel(ns) {
		return ns, nil
	}
	from := "K8S_NAMESPACE"
	if g.Namespace != "" {
		from = "-n"
	}
	return "", fmt.Errorf("namespace %q (from %s) is not a DNS label: lowercase letters, digits and '-', starting and ending with a letter or digit, at most 63 characters", ns, from)
}
