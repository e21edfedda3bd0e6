package kube

import (
	"fmt"
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

// Open connects to the cluster of the kubeconfig k, with context ("" = the current context
// of the merged config). Client-side throttling is off: callers bound their own concurrency.
func Open(k Kubeconfig, context string) (*Client, error) {
	rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: k.Explicit}
	if k.Explicit == "" {
		rules.Precedence = k.Precedence
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
		&clientcmd.ConfigOverrides{CurrentContext: context}).ClientConfig()
	if err != nil {
		if k.Explicit == "" && clientcmd.IsEmptyConfig(err) {
			// clientcmd's own message points at KUBERNETES_MASTER, which slipway does not read.
			return nil, fmt.Errorf("kubeconfig %s: none of its files exists or holds a cluster", k)
		}
		return nil, fmt.Errorf("kubeconfig %s: %w", k, err)
	}
	return NewForConfig(cfg)
}
