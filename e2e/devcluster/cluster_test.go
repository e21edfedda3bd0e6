package devcluster_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"slipway.dev/slipway/internal/devcluster"
	"slipway.dev/slipway/internal/devcluster/devtest"
	"slipway.dev/slipway/internal/kube"
)

func client(t *testing.T) (*devcluster.Env, *kube.Client) {
	t.Helper()
	env := devtest.Env(t)
	c, err := kube.New(env.Kubeconfig, "")
	if err != nil {
		t.Fatal(err)
	}
	return env, c
}

func namespace(t *testing.T, c *kube.Client, prefix string) string {
	t.Helper()
	ns := fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano()%1_000_000)
	_, err := c.Clientset.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Clientset.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	return ns
}

func deployment(ns, name, outcome string, claim string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	ctr := corev1.Container{Name: "main", Image: "example.invalid/" + name + ":1"}
	if outcome != "" {
		ctr.Env = []corev1.EnvVar{{Name: devcluster.DevPodVar, Value: outcome}}
	}
	pod := corev1.PodSpec{Containers: []corev1.Container{ctr}}
	if claim != "" {
		pod.Volumes = []corev1.Volume{{Name: "state", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}
		pod.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "state", MountPath: "/var/lib"}}
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: pod},
		},
	}
}

func TestDevClusterNodesAndVersion(t *testing.T) {
	env, c := client(t)
	nodes, err := c.Clientset.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var kwok []corev1.Node
	for _, n := range nodes.Items {
		if n.Annotations["kwok.x-k8s.io/node"] == "fake" {
			kwok = append(kwok, n)
		}
	}
	if len(kwok) != 3 {
		t.Fatalf("kwok nodes = %d, want 3", len(kwok))
	}
	for _, n := range kwok {
		if n.Status.Allocatable.Pods().Value() < 1000 {
			t.Errorf("node %s has room for %d pods, want at least 1000", n.Name, n.Status.Allocatable.Pods().Value())
		}
	}
	v, err := c.Clientset.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v.GitVersion != devcluster.KubeVersion {
		t.Errorf("server version = %s, want %s", v.GitVersion, devcluster.KubeVersion)
	}
	out, err := exec.Command(env.Kubectl(), "--kubeconfig", env.Kubeconfig, "version", "--client", "-o", "yaml").CombinedOutput()
	if err != nil || !strings.Contains(string(out), devcluster.KubeVersion) {
		t.Errorf("kubectl version --client = %s, %v; want %s", out, err, devcluster.KubeVersion)
	}
	if _, err := c.Clientset.NodeV1().RuntimeClasses().Get(context.Background(), "systemd", metav1.GetOptions{}); err != nil {
		t.Errorf("RuntimeClass systemd: %v", err)
	}
}

func TestDeploymentWithClaimBecomesReady(t *testing.T) {
	_, c := client(t)
	ctx := context.Background()
	ns := namespace(t, c, "devtest-ready")
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "web-state", Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if _, err := c.Clientset.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Clientset.AppsV1().Deployments(ns).Create(ctx, deployment(ns, "web", "", "web-state"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	devtest.WaitFor(t, 60*time.Second, "claim web-state Bound (default StorageClass)", func() (bool, string) {
		p, err := c.Clientset.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "web-state", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Status.Phase == corev1.ClaimBound, string(p.Status.Phase)
	})
	// kwok provisions the volume (pre-bound to the claim); the PV controller binds both.
	p, err := c.Clientset.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "web-state", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pv, err := c.Clientset.CoreV1().PersistentVolumes().Get(ctx, p.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("volume of claim web-state: %v", err)
	}
	if pv.Status.Phase != corev1.VolumeBound || pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != p.UID ||
		pv.Annotations["pv.kubernetes.io/provisioned-by"] != "kwok.x-k8s.io/volume" {
		t.Errorf("volume %s: phase %s, claimRef %+v, annotations %v; want Bound to claim %s, provisioned by kwok", pv.Name, pv.Status.Phase, pv.Spec.ClaimRef, pv.Annotations, p.UID)
	}
	devtest.WaitFor(t, 60*time.Second, "deployment web ready", func() (bool, string) {
		d, err := c.Clientset.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return d.Status.ReadyReplicas == 1 && d.Status.UpdatedReplicas == 1, fmt.Sprintf("%+v", d.Status)
	})
}

func TestSimulatedOutcomes(t *testing.T) {
	_, c := client(t)
	ctx := context.Background()
	ns := namespace(t, c, "devtest-outcomes")
	for _, o := range []string{devcluster.OutcomeNeverReady, devcluster.OutcomeCrashLoop, devcluster.OutcomePullError} {
		if _, err := c.Clientset.AppsV1().Deployments(ns).Create(ctx, deployment(ns, o, o, ""), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pod := func(app string) (*corev1.Pod, string) {
		ps, err := c.Clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
		if err != nil {
			return nil, err.Error()
		}
		if len(ps.Items) != 1 || len(ps.Items[0].Status.ContainerStatuses) != 1 {
			return nil, fmt.Sprintf("%d pods", len(ps.Items))
		}
		p := &ps.Items[0]
		return p, fmt.Sprintf("phase %s, container %+v", p.Status.Phase, p.Status.ContainerStatuses[0].State)
	}
	t.Run("never-ready stays unready while Running", func(t *testing.T) {
		devtest.WaitFor(t, 60*time.Second, "never-ready pod Running", func() (bool, string) {
			p, s := pod("never-ready")
			return p != nil && p.Status.Phase == corev1.PodRunning, s
		})
		// An ordinary pod created now becomes Ready through kwok's pod-ready stage: once it is,
		// that stage has had its turn at the never-ready pod too.
		if _, err := c.Clientset.AppsV1().Deployments(ns).Create(ctx, deployment(ns, "control", "", ""), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		devtest.WaitFor(t, 60*time.Second, "control pod Ready", func() (bool, string) {
			p, s := pod("control")
			return p != nil && podReady(p), s
		})
		p, s := pod("never-ready")
		if p == nil || p.Status.ContainerStatuses[0].Ready || podReady(p) {
			t.Fatalf("never-ready pod became ready: %s", s)
		}
	})
	t.Run("crashloop shows CrashLoopBackOff with restarts rising", func(t *testing.T) {
		var first int32
		devtest.WaitFor(t, 60*time.Second, "crashloop pod in CrashLoopBackOff", func() (bool, string) {
			p, s := pod("crashloop")
			if p == nil || p.Status.ContainerStatuses[0].State.Waiting == nil {
				return false, s
			}
			first = p.Status.ContainerStatuses[0].RestartCount
			return p.Status.ContainerStatuses[0].State.Waiting.Reason == "CrashLoopBackOff", s
		})
		devtest.WaitFor(t, 30*time.Second, "crashloop restart count rising", func() (bool, string) {
			p, s := pod("crashloop")
			return p != nil && p.Status.ContainerStatuses[0].RestartCount > first, s
		})
	})
	t.Run("pull-error shows ErrImagePull or ImagePullBackOff", func(t *testing.T) {
		devtest.WaitFor(t, 60*time.Second, "pull-error pod waiting on its image", func() (bool, string) {
			p, s := pod("pull-error")
			if p == nil || p.Status.ContainerStatuses[0].State.Waiting == nil {
				return false, s
			}
			r := p.Status.ContainerStatuses[0].State.Waiting.Reason
			return r == "ErrImagePull" || r == "ImagePullBackOff", s
		})
	})
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// A second cluster in its own directory, with a feature gate the default one lacks: its API
// server keeps a container's stop signal (ContainerStopSignals=true) where the default
// cluster's drops it; up finds it running the second time and refuses other gates; down
// leaves none of its processes alive and its data gone.
func TestUpAgainAndDown(t *testing.T) {
	main := devtest.Env(t) // the binaries are built
	dir := filepath.Join(t.TempDir(), "dev")
	ctx := context.Background()
	gates := []string{"ContainerStopSignals=true"}
	env, running, err := devcluster.Up(ctx, devcluster.Options{Dir: dir, FeatureGates: gates, Core: true, NoRealNode: true})
	if err != nil {
		t.Fatal(err)
	}
	if running {
		t.Fatal("first Up said the cluster was already running")
	}
	for _, c := range []struct {
		env  *devcluster.Env
		want bool
	}{{main, false}, {env, true}} {
		kc, err := kube.New(c.env.Kubeconfig, "")
		if err != nil {
			t.Fatal(err)
		}
		if got, err := kc.StopSignalSupported(ctx, "default"); err != nil || got != c.want {
			t.Errorf("cluster %s (gates %q): stop signals supported = %t, %v; want %t", c.env.Dir, c.env.FeatureGates, got, err, c.want)
		}
	}
	if _, _, err := devcluster.Up(ctx, devcluster.Options{Dir: dir, FeatureGates: []string{"ContainerStopSignals=false"}, Core: true, NoRealNode: true}); err == nil || !strings.Contains(err.Error(), "feature gates") {
		t.Errorf("Up with other gates = %v, want a refusal naming the feature gates", err)
	}
	again, running, err := devcluster.Up(ctx, devcluster.Options{Dir: dir, Core: true, NoRealNode: true})
	if err != nil || !running || again.Server != env.Server {
		t.Fatalf("second Up = %v, running %v, %v; want the running cluster %s", again, running, err, env.Server)
	}
	var pids []int
	entries, err := os.ReadDir(filepath.Join(dir, "pids"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, "pids", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, pid)
	}
	if len(pids) != 7 {
		t.Fatalf("recorded %d PIDs, want 7 (etcd, kube-apiserver, controller-manager, scheduler, kwok, registry, knotd)", len(pids))
	}
	if err := devcluster.Down(dir); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && !isZombie(string(b)) {
			t.Errorf("process %d still runs after down: %s", pid, b)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("data directory %s still there after down: %v", dir, err)
	}
	if err := devcluster.Down(dir); !errors.Is(err, devcluster.ErrNotRunning) {
		t.Errorf("down with nothing running = %v, want ErrNotRunning", err)
	}
}

// isZombie reads the state field of /proc/PID/stat: a zombie has exited and waits only for
// its parent (here possibly an init that does not reap) to collect it.
func isZombie(stat string) bool {
	i := strings.LastIndexByte(stat, ')')
	return i > 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}
