package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

// TestRealHello: examples/hello as the README deploys it (a copy, under a group name of its
// own): apply ends with every node Ready, all on the real node; db runs in a user namespace of
// its own and answers on 5432; web and each worker run systemd as PID 1, `running`, serving
// HTTP on 80 from the example's unit, each pod with its own machine ID.
func TestRealHello(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../examples/hello/slipway.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tmpl := strings.Replace(string(b), "group: hello\n", "group: {{GROUP}}\n", 1)
	g, node := NewRealGroup(t, "real-hello", tmpl)
	if out, err := exec.Command("cp", "-a", "../examples/hello/nodes", g.Dir).CombinedOutput(); err != nil {
		t.Fatalf("copy examples/hello/nodes: %v\n%s", err, out)
	}
	g.MustRun(0, "apply", "--yes")
	g.roRequireReady("db", 1)
	g.roRequireReady("web", 1)
	g.roRequireReady("web-worker", 2)
	db := g.realPod("db", node)
	realRequireUserNamespace(t, g, db.Name)
	// db's nc echoes what it is sent: a real program on 5432, reached here from inside its pod.
	if got := g.exec(db.Name, "sh", "-c", "(echo ping; sleep 1) | nc -w 2 127.0.0.1 5432"); got != "ping\n" {
		t.Errorf("nc to db's 5432 answered %q, want the echo %q", got, "ping\n")
	}
	// web and its workers: systemd as PID 1, running, the unit serving 80; a machine ID each.
	ids := map[string]string{}
	for _, name := range []string{"web", "web-worker"} {
		for _, p := range g.roPods(name) {
			if p.DeletionTimestamp != nil {
				continue
			}
			if p.Spec.NodeName != node {
				t.Errorf("pod %s runs on %q, want the real node %s", p.Name, p.Spec.NodeName, node)
			}
			if got := g.exec(p.Name, "cat", "/proc/1/comm"); got != "systemd\n" {
				t.Errorf("pod %s: PID 1 is %q, want systemd", p.Name, got)
			}
			if got := g.exec(p.Name, "systemctl", "is-system-running"); got != "running\n" {
				t.Errorf("pod %s: systemctl is-system-running says %q, want running", p.Name, got)
			}
			if got := g.exec(p.Name, "busybox", "wget", "-qO-", "http://127.0.0.1/"); got != "hello from web\n" {
				t.Errorf("pod %s: HTTP on 80 answered %q, want the unit's page", p.Name, got)
			}
			ids[g.exec(p.Name, "cat", "/etc/machine-id")] = p.Name
		}
	}
	if len(ids) != 3 {
		t.Errorf("machine IDs of web and its 2 workers: %v, want 3 different", ids)
	}
	want := strings.ReplaceAll(g.roState().State.Nodes["web"].MachineID, "-", "") + "\n"
	if got := g.exec(g.realPod("web", node).Name, "cat", "/etc/machine-id"); got != want {
		t.Errorf("web's /etc/machine-id is %q, want the state's machine ID %q", got, want)
	}
}

// realRequireUserNamespace fails unless pod runs in a user namespace of its own (its uid_map
// maps root to an unprivileged host ID), and a file it writes as root on its claim is root's
// inside and on this machine (an idmapped mount), as is one root writes here.
func realRequireUserNamespace(t *testing.T, g *Group, pod string) {
	t.Helper()
	uidMap := strings.Fields(g.exec(pod, "cat", "/proc/self/uid_map"))
	if len(uidMap) != 3 || uidMap[0] != "0" || uidMap[1] == "0" || uidMap[2] == "4294967295" {
		t.Errorf("pod %s: /proc/self/uid_map %q, want root mapped to a host ID other than 0 (a user namespace)", pod, uidMap)
	}
	if got := g.exec(pod, "sh", "-c", "echo root > /var/lib/by-root && stat -c %u:%g /var/lib/by-root"); got != "0:0\n" {
		t.Errorf("a file written as root on the claim is %q inside, want 0:0", got)
	}
	dir := g.claimDir(strings.SplitN(pod, "-", 2)[0])
	fi, err := os.Stat(filepath.Join(dir, "by-root"))
	if err != nil {
		t.Fatalf("the claim's directory on this machine: %v", err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != 0 || st.Gid != 0 {
		t.Errorf("%s/by-root on this machine is %d:%d, want 0:0 (the claim is mounted idmapped)", dir, st.Uid, st.Gid)
	}
	if err := os.WriteFile(filepath.Join(dir, "from-host"), []byte("host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := g.exec(pod, "stat", "-c", "%u:%g", "/var/lib/from-host"); got != "0:0\n" {
		t.Errorf("a file root wrote on this machine in the claim is %q inside, want 0:0", got)
	}
}

// realUserGroup is one `init: none` node on the real node, serving 8080 with busybox httpd;
// the image holds its own /etc/resolv.conf, which the pod must not see.
const realUserGroup = `group: {{GROUP}}
nodes:
  app:
    image:
      rootfs: nodes/app/rootfs
      command: [/bin/sh, -c, 'trap "exit 0" TERM; httpd -f -p 8080 -h /tmp & wait']
    init: none
    readiness: {tcp: 8080}
    state: {size: 1Gi}
    stopGracePeriod: 5s
    firewall: {served: [8080]}
    {{REAL}}
`

// TestRealUserNamespaceAndResolvConf: an `init: none` node on the real node runs in its own
// user namespace with root-owned files on its claim, and its /etc/resolv.conf is the one the
// kubelet gives the pod (FR-011a), not the image's.
func TestRealUserNamespaceAndResolvConf(t *testing.T) {
	t.Parallel()
	g, node := NewRealGroup(t, "real-userns", realUserGroup, "app")
	g.WriteFile("nodes/app/rootfs/etc/resolv.conf", "nameserver 192.0.2.53\nsearch image.invalid\n")
	g.MustRun(0, "apply", "--yes")
	pod := g.realPod("app", node)
	realRequireUserNamespace(t, g, pod.Name)

	got := g.exec(pod.Name, "cat", "/etc/resolv.conf")
	if strings.Contains(got, "192.0.2.53") || strings.Contains(got, "image.invalid") {
		t.Errorf("the pod sees the image's /etc/resolv.conf:\n%s", got)
	}
	want := nameservers(kubeletResolvConf(t, g))
	if len(want) == 0 {
		t.Fatalf("the kubelet's resolv.conf names no nameserver")
	}
	if diff := cmp.Diff(want, nameservers(got)); diff != "" {
		t.Errorf("nameservers of the pod's /etc/resolv.conf (-kubelet's +pod's):\n%s\npod's file:\n%s", diff, got)
	}
	if mi := g.exec(pod.Name, "cat", "/proc/self/mountinfo"); !regexp.MustCompile(`(?m)^\S+ \S+ \S+ \S+ /etc/resolv.conf `).MatchString(mi) {
		t.Errorf("/etc/resolv.conf is not a mount the runtime made for the pod:\n%s", mi)
	}
}

// kubeletResolvConf reads the file the real node's kubelet takes pods' resolv.conf from: the
// resolvConf of its configuration file (--config of the running kubelet, whose PID dev up
// records), /etc/resolv.conf when unset (the kubelet's default). The API server's node proxy
// (/configz) refuses the kubelet's loopback address.
func kubeletResolvConf(t *testing.T, g *Group) string {
	t.Helper()
	pid, err := os.ReadFile(filepath.Join(g.Env.Dir, "pids", "kubelet"))
	if err != nil {
		t.Fatalf("the real node's kubelet: %v", err)
	}
	cmdline, err := os.ReadFile(filepath.Join("/proc", strings.TrimSpace(string(pid)), "cmdline"))
	if err != nil {
		t.Fatalf("the real node's kubelet: %v", err)
	}
	config := ""
	args := strings.Split(string(cmdline), "\x00")
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--config="); ok {
			config = v
		} else if a == "--config" && i+1 < len(args) {
			config = args[i+1]
		}
	}
	if config == "" {
		t.Fatalf("the kubelet runs without --config: %q", args)
	}
	b, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		ResolvConf *string `json:"resolvConf"`
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatalf("%s: %v", config, err)
	}
	path := "/etc/resolv.conf"
	if cfg.ResolvConf != nil {
		path = *cfg.ResolvConf
	}
	conf, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the kubelet's resolvConf: %v", err)
	}
	return string(conf)
}

// nameservers are the addresses of a resolv.conf's nameserver lines, at most three (what a
// resolver and the kubelet use).
func nameservers(conf string) []string {
	var out []string
	for _, l := range strings.Split(conf, "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "nameserver" && len(out) < 3 {
			out = append(out, f[1])
		}
	}
	return out
}
