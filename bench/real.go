package main

// The peer mode on the real node (-real, issue 34): a group whose nodes really run.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slipway.dev/slipway/internal/devcluster"
	"slipway.dev/slipway/internal/kube"
)

// realLabel labels and taints the dev cluster's real node.
const realLabel = "slipway.dev/real-node"

// realNamespaces gives -real namespaces of its own.
func realNamespaces() {
	nsSlipway, nsKubectl, nsHelm, group = "bench-real-slipway", "bench-real-kubectl", "bench-real-helm", "bench-real-slipway"
}

// requireRealNode fails unless the dev cluster has a Ready real node.
func requireRealNode(ctx context.Context, kc *kube.Client) error {
	nodes, err := kc.Clientset.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: realLabel + "=true"})
	if err != nil {
		return err
	}
	for _, n := range nodes.Items {
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return nil
			}
		}
	}
	return fmt.Errorf("-real: the dev cluster has no Ready node labelled %s=true (see slipway dev env and cluster.json's noRealNode)", realLabel)
}

// writeRealGroup is writeGroup for the real node: each node a busybox rootfs of its own (with
// the run's marker, so its image is new to the registry) running httpd on 80, ready on 80,
// placed on the real node. The shell exits on SIGTERM, so destroy does not wait out a grace
// period.
func writeRealGroup(dir string, n int, run, grp, ns string) error {
	var y strings.Builder
	fmt.Fprintf(&y, "group: %s\nnamespace: %s\ndefaults:\n  state: {size: 1Gi}\n", grp, ns)
	fmt.Fprintf(&y, "  placement: {nodeSelector: {%s: \"true\"}, tolerations: [{key: %s, operator: Equal, value: \"true\", effect: NoSchedule}]}\nnodes:\n", realLabel, realLabel)
	for i := range n {
		name := nodeName(i)
		root := filepath.Join(dir, "nodes", name, "rootfs")
		if err := os.RemoveAll(root); err != nil {
			return err
		}
		if err := devcluster.BusyboxRootfs(context.Background(), root); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(root, "etc", "bench"), []byte(fmt.Sprintf("node %s run %s\n", name, run)), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(&y, `  %s:
    image: {rootfs: nodes/%s/rootfs, command: [/bin/sh, -c, 'trap "exit 0" TERM; httpd -f -p 80 -h /etc & wait']}
    init: none
    readiness: {tcp: 80}
    stopGracePeriod: 5s
    firewall: {served: [80], published: [80]}
`, name, name)
	}
	return os.WriteFile(filepath.Join(dir, "slipway.yaml"), []byte(y.String()), 0o644)
}
