package devcluster_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"slipway.dev/slipway/internal/devcluster"
	"slipway.dev/slipway/internal/devcluster/devtest"
	"slipway.dev/slipway/internal/kube"
)

// A second environment (another directory, with its own real node and SPIRE server) runs beside
// the shared one on machine-wide names and ranges of its own, a pod on each real node is Ready,
// and its dev down removes its bridge, SPIRE address and cgroups and nothing of the shared
// one's: the shared one's bridge and SPIRE address stay, and its real node's pod stays Ready
// (issue 45: dev down of a second environment deleted the shared bridge and SPIRE address).
func TestSecondEnvironmentDownLeavesShared(t *testing.T) {
	main, _ := devtest.Spire(t) // the shared environment, with SPIRE's binaries built
	mainShare := main.HostShare()
	mainNode := realNode(t, main)
	mc, err := kube.New(main.Kubeconfig, "")
	if err != nil {
		t.Fatal(err)
	}
	mainPod := readyRealPod(t, main, mc, mainNode)

	dir := filepath.Join(t.TempDir(), "dev")
	t.Cleanup(func() {
		if err := devcluster.Down(dir); err != nil && !errors.Is(err, devcluster.ErrNotRunning) {
			t.Errorf("cleanup: down %s: %v", dir, err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	second, _, err := devcluster.Up(ctx, devcluster.Options{Dir: dir, Core: true, Spire: true, Progress: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	share := second.HostShare()
	for what, pair := range map[string][2]any{
		"bridge":       {share.Bridge, mainShare.Bridge},
		"bridge MAC":   {share.BridgeMAC(), mainShare.BridgeMAC()},
		"pod range":    {share.PodCIDR, mainShare.PodCIDR},
		"SPIRE addr":   {share.SpireAddr, mainShare.SpireAddr},
		"kubelet port": {share.KubeletPort, mainShare.KubeletPort},
		"cgroup root":  {share.CgroupRoot, mainShare.CgroupRoot},
	} {
		if pair[0] == pair[1] {
			t.Errorf("second environment's %s %v is the shared one's", what, pair[0])
		}
	}
	sc, err := kube.New(second.Kubeconfig, "")
	if err != nil {
		t.Fatal(err)
	}
	pod := readyRealPod(t, second, sc, realNode(t, second))
	if pod.Status.PodIP == "" || !cidrHas(t, share.PodCIDR, pod.Status.PodIP) {
		t.Errorf("second environment's pod IP %q, want one in %s", pod.Status.PodIP, share.PodCIDR)
	}
	if !hasInterface(share.Bridge) || !hostHasAddr(share.SpireAddr) {
		t.Fatalf("second environment: bridge %s up %t, SPIRE address %s on lo %t; want both", share.Bridge, hasInterface(share.Bridge), share.SpireAddr, hostHasAddr(share.SpireAddr))
	}
	mainBridge, mainAddr := hasInterface(mainShare.Bridge), hostHasAddr(mainShare.SpireAddr)

	if err := devcluster.Down(dir); err != nil {
		t.Fatal(err)
	}
	if hasInterface(share.Bridge) || hostHasAddr(share.SpireAddr) {
		t.Errorf("after its down: bridge %s there %t, SPIRE address %s there %t; want both gone", share.Bridge, hasInterface(share.Bridge), share.SpireAddr, hostHasAddr(share.SpireAddr))
	}
	if hasInterface(mainShare.Bridge) != mainBridge || hostHasAddr(mainShare.SpireAddr) != mainAddr || !mainAddr {
		t.Errorf("after the second's down: shared bridge %s there %t (before %t), SPIRE address %s there %t (before %t)",
			mainShare.Bridge, hasInterface(mainShare.Bridge), mainBridge, mainShare.SpireAddr, hostHasAddr(mainShare.SpireAddr), mainAddr)
	}
	p, err := mc.Clientset.CoreV1().Pods(mainPod.Namespace).Get(context.Background(), mainPod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !podReady(p) || len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("shared environment's pod %s/%s after the second's down: %v; want Ready, never restarted", mainPod.Namespace, mainPod.Name, p.Status)
	}
}

// readyRealPod runs a busybox pod on the real node of env and waits for it to be Ready.
func readyRealPod(t *testing.T, env *devcluster.Env, c *kube.Client, nodeName string) *corev1.Pod {
	t.Helper()
	ns := namespace(t, c, "twoenvs")
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "sleeper", Namespace: ns},
		Spec: corev1.PodSpec{
			NodeName:                      nodeName,
			Tolerations:                   []corev1.Toleration{{Key: devcluster.RealNodeLabel, Operator: corev1.TolerationOpExists}},
			HostUsers:                     ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{{
				Name: "c", Image: busyboxImage(t, env.Registry), Command: []string{"/bin/sh", "-c", "sleep 100000"},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/sh", "-c", "true"}}}, PeriodSeconds: 2},
			}},
		},
	}
	ctx := context.Background()
	if _, err := c.Clientset.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var got *corev1.Pod
	waitFor(t, 2*time.Minute, "pod "+ns+"/sleeper Ready on "+env.Dir+"'s real node", func() (bool, string) {
		p, err := c.Clientset.CoreV1().Pods(ns).Get(ctx, "sleeper", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		got = p
		return podReady(p), string(p.Status.Phase)
	})
	return got
}

func cidrHas(t *testing.T, cidr, ip string) bool {
	t.Helper()
	_, n, err := net.ParseCIDR(cidr)
	if err != nil {
		t.Fatal(err)
	}
	return n.Contains(net.ParseIP(ip))
}

func hasInterface(name string) bool {
	_, err := net.InterfaceByName(name)
	return err == nil
}

func hostHasAddr(ip string) bool {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.String() == ip {
			return true
		}
	}
	return false
}
