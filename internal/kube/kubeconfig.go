package kube

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"k8s.io/client-go/tools/clientcmd"
)

// Kubeconfig says where the cluster's kubeconfig comes from: one file that must exist
// (Explicit), or a list merged as kubectl merges a colon-separated KUBECONFIG (Precedence):
// for each value the first file that sets it wins, files that do not exist are skipped.
type Kubeconfig struct {
	Explicit   string
	Precedence []string
}

// String names the kubeconfig in messages: its file, or its list as KUBECONFIG writes it.
func (k Kubeconfig) String() string {
	if k.Explicit != "" {
		return k.Explicit
	}
	return strings.Join(k.Precedence, ":")
}

// NoKubeconfigError is Open's error when no file of the kubeconfig exists (or, for a list,
// none holds a cluster): the command line then says how to get one.
type NoKubeconfigError struct {
	Source Kubeconfig
	Err    error
}

func (e *NoKubeconfigError) Error() string { return fmt.Sprintf("kubeconfig %s: %v", e.Source, e.Err) }
func (e *NoKubeconfigError) Unwrap() error { return e.Err }

// Open connects to the cluster of the kubeconfig k, with context ("" = the current context
// of the merged config). Client-side throttling is off: callers bound their own concurrency.
func Open(k Kubeconfig, context string) (*Client, error) {
	if k.Explicit != "" {
		if _, err := os.Stat(k.Explicit); errors.Is(err, fs.ErrNotExist) {
			return nil, &NoKubeconfigError{Source: k, Err: err}
		}
	}
	rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: k.Explicit}
	if k.Explicit == "" {
		rules.Precedence = k.Precedence
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
		&clientcmd.ConfigOverrides{CurrentContext: context}).ClientConfig()
	if err != nil {
		if k.Explicit == "" && clientcmd.IsEmptyConfig(err) {
			// clientcmd's own message points at KUBERNETES_MASTER, which slipway does not read.
			return nil, &NoKubeconfigError{Source: k, Err: errors.New("none of its files exists or holds a cluster")}
		}
		return nil, fmt.Errorf("kubeconfig %s: %w", k, err)
	}
	return NewForConfig(cfg)
}
