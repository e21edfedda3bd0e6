package devcluster

import (
	"fmt"
	"strings"
)

// checkFeatureGates refuses a gate that is not Name=true or Name=false, before anything starts.
func checkFeatureGates(gates []string) error {
	for _, g := range gates {
		name, value, ok := strings.Cut(g, "=")
		if !ok || name == "" || strings.ContainsAny(name, ", ") || (value != "true" && value != "false") {
			return fmt.Errorf("dev cluster: feature gate %q: want Name=true or Name=false", g)
		}
	}
	return nil
}

// featureGateArgs is kube-apiserver's --feature-gates for gates, none when there are none.
func featureGateArgs(gates []string) []string {
	if len(gates) == 0 {
		return nil
	}
	return []string{"--feature-gates=" + strings.Join(gates, ",")}
}
