package devcluster_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"slipway.dev/slipway/internal/devcluster"
	"slipway.dev/slipway/internal/kube"
)

// realNode is the dev cluster's real node; a cluster without one fails the test with the
// reason dev up recorded (never a skip: on this kind of machine the node must run).
func realNode(t *testing.T, env *devcluster.Env) string {
	t.Helper()
	if env.RealNode == "" {
		t.Fatalf("the dev cluster in %s has no real node: %s", env.Dir, env.NoRealNode)
	}
	return env.RealNode
}

// busyboxImage pushes an image of Debian's static busybox (/bin/busybox, /bin/sh) to the dev
// registry and returns its reference.
func busyboxImage(t *testing.T, registry string) string {
	t.Helper()
	b, err := os.ReadFile("/bin/busybox")
	if err != nil {
		t.Fatalf("static busybox (Debian busybox-static, .ci/packages): %v", err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range []*tar.Header{
		{Name: "bin/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "bin/busybox", Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(b))},
		{Name: "bin/sh", Typeflag: tar.TypeSymlink, Linkname: "busybox", Mode: 0o777},
		{Name: "data/", Typeflag: tar.TypeDir, Mode: 0o755},
	} {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(b); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	cf, _ := img.ConfigFile()
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "amd64"
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	ref := registry + "/devcluster-test/busybox:" + d.Hex[:12]
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, img, remote.WithContext(context.Background())); err != nil {
		t.Fatal(err)
	}
	return ref
}

func TestRealNode(t *testing.T) {
	env, c := client(t)
	nodeName := realNode(t, env)
	ctx := context.Background()
	node, err := c.Clientset.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ready := false
	for _, cond := range node.Status.Conditions {
		ready = ready || (cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue)
	}
	if !ready {
		t.Errorf("real node %s is not Ready: %v", nodeName, node.Status.Conditions)
	}
	wantTaint := corev1.Taint{Key: devcluster.RealNodeLabel, Value: "true", Effect: corev1.TaintEffectNoSchedule}
	tainted := false
	for _, tt := range node.Spec.Taints {
		tainted = tainted || (tt.Key == wantTaint.Key && tt.Value == wantTaint.Value && tt.Effect == wantTaint.Effect)
	}
	if !tainted || node.Labels[devcluster.RealNodeLabel] != "true" {
		t.Errorf("real node: taints %v, labels %v; want the taint and label %s=true", node.Spec.Taints, node.Labels, devcluster.RealNodeLabel)
	}
	if got, want := node.Status.NodeInfo.ContainerRuntimeVersion, "containerd://"+strings.TrimPrefix(devcluster.ContainerdVersion, "v"); got != want {
		t.Errorf("runtime %s, want %s", got, want)
	}
	if node.Annotations["kwok.x-k8s.io/node"] != "" {
		t.Errorf("real node carries kwok's annotation: kwok would manage it")
	}
	if got := node.Status.NodeInfo.KubeletVersion; got != devcluster.KubeVersion {
		t.Errorf("kubelet %s, want %s", got, devcluster.KubeVersion)
	}
	t.Run("bridge MAC fixed", func(t *testing.T) { bridgeMACFixed(t, env.HostShare()) })
	t.Run("anonymous refused", func(t *testing.T) { anonymousRefused(t, node) })
	t.Run("pod with a claim", func(t *testing.T) { realPodWithClaim(t, env, c, nodeName) })
	t.Run("systemd as PID 1", func(t *testing.T) { systemdPod(t, env, c, nodeName) })
}

// systemdPod: on the RuntimeClass systemd, an unprivileged, user-namespaced pod of the dev
// systemd base image, with the memory-backed /run, /run/lock and /tmp slipway renders, runs
// systemd as PID 1 until `systemctl is-system-running` says running (on a cgroup v1 host
// through tools/runc-systemd).
func systemdPod(t *testing.T, env *devcluster.Env, c *kube.Client, nodeName string) {
	ctx := context.Background()
	ns := namespace(t, c, "realnode-systemd")
	mem := func(name string) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}}
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "sd", Namespace: ns},
		Spec: corev1.PodSpec{
			HostUsers:                     ptr.To(false),
			RuntimeClassName:              ptr.To("systemd"),
			NodeSelector:                  map[string]string{devcluster.RealNodeLabel: "true"},
			Tolerations:                   []corev1.Toleration{{Key: devcluster.RealNodeLabel, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			TerminationGracePeriodSeconds: ptr.To(int64(5)),
			Containers: []corev1.Container{{Name: "node", Image: env.Registry + "/" + devcluster.SystemdBase,
				Command: []string{"/sbin/init"}, Env: []corev1.EnvVar{{Name: "container", Value: "oci"}},
				ReadinessProbe: &corev1.Probe{PeriodSeconds: 2, ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"systemctl", "is-system-running"}}}},
				VolumeMounts:   []corev1.VolumeMount{{Name: "run", MountPath: "/run"}, {Name: "run-lock", MountPath: "/run/lock"}, {Name: "tmp", MountPath: "/tmp"}}}},
			Volumes: []corev1.Volume{mem("run"), mem("run-lock"), mem("tmp")},
		},
	}
	if _, err := c.Clientset.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Minute, "systemd pod Ready on the real node", func() (bool, string) {
		p, err := c.Clientset.CoreV1().Pods(ns).Get(ctx, "sd", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return podReady(p) && p.Spec.NodeName == nodeName, fmt.Sprintf("node %q, phase %s, %v", p.Spec.NodeName, p.Status.Phase, p.Status.ContainerStatuses)
	})
	exec1 := func(args ...string) string {
		out, err := exec.Command(env.Kubectl(), append([]string{"--kubeconfig", env.Kubeconfig, "-n", ns, "exec", "sd", "--"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("exec %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if got := exec1("systemctl", "is-system-running"); got != "running" {
		t.Errorf("systemctl is-system-running = %q, want running", got)
	}
	if got := exec1("cat", "/proc/1/comm"); got != "systemd" {
		t.Errorf("PID 1 is %q, want systemd", got)
	}
	if f := strings.Fields(exec1("cat", "/proc/self/uid_map")); len(f) < 3 || f[1] == "0" {
		t.Errorf("uid_map %q: want a user namespace", f)
	}
}

// anonymousRefused: the kubelet's API answers 401 to a caller without a certificate.
func anonymousRefused(t *testing.T, node *corev1.Node) {
	var host string
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeHostName {
			host = a.Address
		}
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	for _, path := range []string{"/pods", "/runningpods/", "/healthz", "/containerLogs/kube-system/x/y"} {
		url := fmt.Sprintf("https://%s:%d%s", host, node.Status.DaemonEndpoints.KubeletEndpoint.Port, path)
		resp, err := hc.Get(url)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("anonymous GET %s = %s, want 401 Unauthorized", url, resp.Status)
		}
	}
}

// realPodWithClaim runs a user-namespaced busybox pod with a claim on the real node, reads
// its log and runs a command in it through the API server (its kubelet client certificate),
// then deletes it and its claim and sees the claim's directory go.
func realPodWithClaim(t *testing.T, env *devcluster.Env, c *kube.Client, nodeName string) {
	ctx := context.Background()
	ns := namespace(t, c, "realnode")
	image := busyboxImage(t, env.Registry)
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
	}
	if _, err := c.Clientset.CoreV1().PersistentVolumeClaims(ns).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "bb", Namespace: ns},
		Spec: corev1.PodSpec{
			HostUsers:                     ptr.To(false),
			NodeSelector:                  map[string]string{devcluster.RealNodeLabel: "true"},
			Tolerations:                   []corev1.Toleration{{Key: devcluster.RealNodeLabel, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			TerminationGracePeriodSeconds: ptr.To(int64(2)),
			Containers: []corev1.Container{{Name: "main", Image: image,
				Command:      []string{"/bin/busybox", "sh", "-c", "echo hello from the real node; cat /proc/self/uid_map; exec /bin/busybox sleep 3600"},
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}},
		},
	}
	if _, err := c.Clientset.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Minute, "pod bb Ready on the real node", func() (bool, string) {
		p, err := c.Clientset.CoreV1().Pods(ns).Get(ctx, "bb", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return podReady(p) && p.Spec.NodeName == nodeName, fmt.Sprintf("node %q, phase %s, %v", p.Spec.NodeName, p.Status.Phase, p.Status.ContainerStatuses)
	})
	kubectl := func(args ...string) string {
		out, err := exec.Command(env.Kubectl(), append([]string{"--kubeconfig", env.Kubeconfig, "-n", ns}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	logs := kubectl("logs", "bb")
	if !strings.Contains(logs, "hello from the real node") {
		t.Errorf("kubectl logs = %q, want the pod's greeting", logs)
	}
	if fields := strings.Fields(logs[strings.Index(logs, "\n")+1:]); len(fields) < 3 || fields[1] == "0" {
		t.Errorf("uid_map %q: want a user namespace (root mapped to an unprivileged host uid)", fields)
	}
	kubectl("exec", "bb", "--", "/bin/busybox", "sh", "-c", "echo kept > /data/file")
	if got := kubectl("exec", "bb", "--", "/bin/busybox", "cat", "/data/file"); got != "kept\n" {
		t.Errorf("exec cat = %q, want kept", got)
	}
	pvc, err := c.Clientset.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(env.Dir, "volumes", "pvc-"+string(pvc.UID))
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(dir, "file"), &st); err != nil {
		t.Fatalf("the claim's file on the host: %v", err)
	}
	if st.Uid != 0 {
		t.Errorf("a file the pod's root wrote is owned by host uid %d, want 0 (an idmapped mount)", st.Uid)
	}
	if err := c.Clientset.CoreV1().Pods(ns).Delete(ctx, "bb", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.Clientset.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, "data", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Minute, "the deleted claim's directory removed", func() (bool, string) {
		_, err := os.Stat(dir)
		return os.IsNotExist(err), fmt.Sprintf("%s: %v", dir, err)
	})
}

// waitFor polls cond until it holds or limit passes, then fails with its last word.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(limit)
	var last string
	for time.Now().Before(deadline) {
		var ok bool
		if ok, last = cond(); ok {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("%s: not after %s (%s)", what, limit, last)
}

// bridgeMACFixed: the real node's bridge has a MAC of its own (addr_assign_type 3, set), not
// its lowest port's, which changes as pods come and go and cuts the others off their gateway.
func bridgeMACFixed(t *testing.T, h devcluster.HostShare) {
	ifc, err := net.InterfaceByName(h.Bridge)
	if err != nil {
		t.Fatalf("bridge %s: %v", h.Bridge, err)
	}
	assign, err := os.ReadFile("/sys/class/net/" + h.Bridge + "/addr_assign_type")
	if err != nil {
		t.Fatal(err)
	}
	if got := ifc.HardwareAddr.String(); got != h.BridgeMAC() || strings.TrimSpace(string(assign)) != "3" {
		t.Errorf("bridge %s: MAC %s, addr_assign_type %s; want %s, 3 (set)", h.Bridge, got, strings.TrimSpace(string(assign)), h.BridgeMAC())
	}
}
