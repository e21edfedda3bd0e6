package e2e

// Issue 34: real pods. These tests run the nodes of their groups on the dev cluster's real
// kubelet node (containerd, runc) instead of kwok's simulated ones: images built by slipway
// from a rootfs of Debian's static busybox (devcluster.BusyboxRootfs), placed on the real node
// by their placement. A cluster without the real node fails them with the reason dev up
// recorded: on this kind of machine the node must run.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"slipway.dev/slipway/internal/devcluster"
	"slipway.dev/slipway/internal/devcluster/devtest"
)

// realLabel labels and taints the real node (`slipway.dev/real-node=true:NoSchedule`).
const realLabel = "slipway.dev/real-node"

// realPlacement is a node's placement on the real node: selected by its label, its taint
// tolerated. {{REAL}} in a group template becomes it.
const realPlacement = `placement: {nodeSelector: {` + realLabel + `: "true"}, tolerations: [{key: ` + realLabel + `, operator: Equal, value: "true", effect: NoSchedule}]}`

// realNodeName returns the name of the dev cluster's real node, Ready; it fails the test,
// with the reason dev up recorded in cluster.json, when there is none.
func realNodeName(t *testing.T, g *Group) string {
	t.Helper()
	nodes, err := g.Kube.Clientset.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: realLabel + "=true"})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return n.Name
			}
		}
	}
	var rec struct {
		NoRealNode string `json:"noRealNode"`
	}
	if b, err := os.ReadFile(filepath.Join(g.Env.Dir, "cluster.json")); err == nil {
		_ = json.Unmarshal(b, &rec)
	}
	t.Fatalf("the dev cluster in %s has no Ready node labelled %s=true (%d labelled); dev up recorded: %q",
		g.Env.Dir, realLabel, len(nodes.Items), rec.NoRealNode)
	return ""
}

// NewRealGroup is NewGroup for the real node: {{REAL}} in tmpl becomes realPlacement, and each
// node of nodes gets a busybox rootfs (nodes/<node>/rootfs) that really runs. It fails the test
// when the cluster has no real node. The group's pods are gone when the test ends (their
// containers run on this machine).
func NewRealGroup(t *testing.T, prefix, tmpl string, nodes ...string) (*Group, string) {
	t.Helper()
	g := NewGroup(t, prefix, strings.ReplaceAll(tmpl, "{{REAL}}", realPlacement))
	node := realNodeName(t, g)
	for _, n := range nodes {
		if err := devcluster.BusyboxRootfs(context.Background(), filepath.Join(g.Dir, "nodes", n, "rootfs")); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if t.Failed() {
			// NewGroup leaves a failed test's namespace for a look; its containers would go
			// on running on this machine, so they are stopped (the objects stay).
			ctx := context.Background()
			ds, err := g.Kube.Clientset.AppsV1().Deployments(g.Name).List(ctx, metav1.ListOptions{})
			if err != nil {
				return
			}
			for _, d := range ds.Items {
				_, _ = g.Kube.Clientset.AppsV1().Deployments(g.Name).Patch(ctx, d.Name, types.MergePatchType, []byte(`{"spec":{"replicas":0}}`), metav1.PatchOptions{})
			}
		}
	})
	return g, node
}

// realWriteGroup rewrites the group file from tmpl ({{GROUP}} and {{REAL}} replaced).
func (g *Group) realWriteGroup(tmpl string) {
	g.t.Helper()
	g.roWriteGroupFile(strings.ReplaceAll(tmpl, "{{REAL}}", realPlacement))
}

// realPod returns the one running (not terminating) pod of Deployment name, and fails unless
// it is on the real node.
func (g *Group) realPod(name, node string) corev1.Pod {
	g.t.Helper()
	var live []corev1.Pod
	for _, p := range g.roPods(name) {
		if p.DeletionTimestamp == nil {
			live = append(live, p)
		}
	}
	if len(live) != 1 {
		g.t.Fatalf("deployment %s: %d live pods, want 1: %v", name, len(live), roPodNames(live))
	}
	if live[0].Spec.NodeName != node {
		g.t.Fatalf("pod %s runs on %q, want the real node %s", live[0].Name, live[0].Spec.NodeName, node)
	}
	return live[0]
}

// exec runs a command in the node container of pod through the API server and the kubelet
// (kubectl exec) and returns its stdout.
func (g *Group) exec(pod string, command ...string) string {
	g.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	args := append([]string{"--kubeconfig", g.Env.Kubeconfig, "-n", g.Name, "exec", pod, "-c", "node", "--"}, command...)
	cmd := exec.CommandContext(ctx, g.Env.Kubectl(), args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		g.t.Fatalf("kubectl exec %s -- %s: %v\n%s%s", pod, strings.Join(command, " "), err, out.String(), errb.String())
	}
	return out.String()
}

// claimDir is the directory on this machine that holds the claim of node (its
// PersistentVolume's hostPath, which the real node's kubelet mounts).
func (g *Group) claimDir(node string) string {
	g.t.Helper()
	ctx := context.Background()
	c, err := g.Kube.Clientset.CoreV1().PersistentVolumeClaims(g.Name).Get(ctx, node+"-state", metav1.GetOptions{})
	if err != nil {
		g.t.Fatal(err)
	}
	pv, err := g.Kube.Clientset.CoreV1().PersistentVolumes().Get(ctx, c.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		g.t.Fatal(err)
	}
	switch {
	case pv.Spec.HostPath != nil:
		return pv.Spec.HostPath.Path
	case pv.Spec.Local != nil:
		return pv.Spec.Local.Path
	}
	g.t.Fatalf("volume %s of claim %s is neither hostPath nor local: %+v", pv.Name, c.Name, pv.Spec.PersistentVolumeSource)
	return ""
}

// processesWith lists the processes of this machine whose command line holds marker: the
// real node's containers are processes here, so "nothing left running" is checked on the host.
func processesWith(marker string) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	self := fmt.Sprint(os.Getpid())
	for _, e := range entries {
		if e.Name() == self || strings.Trim(e.Name(), "0123456789") != "" {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(marker)) {
			out = append(out, e.Name()+": "+strings.ReplaceAll(string(bytes.TrimRight(b, "\x00")), "\x00", " "))
		}
	}
	return out
}

// waitGone waits until no process of this machine carries marker.
func waitGone(t *testing.T, marker string, limit time.Duration) {
	t.Helper()
	devtest.WaitFor(t, limit, "no process with "+marker, func() (bool, string) {
		ps := processesWith(marker)
		return len(ps) == 0, strings.Join(ps, "; ")
	})
}
