package sidecar

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fakeProcess is one process of fakeProcTree.
type fakeProcess struct {
	pid, ppid int
	argv      []string
	// container is the kubelet's name of its container ("" for the pause process, which has
	// no termination log), log the file name of that container's start.
	container, log string
	cgroup         string // "" is the container's own: one per container name
	unshared       bool   // it left its container's mount namespace (no termination log)
}

// fakeProcTree is a stand-in for the /proc of a pod whose containers share one process
// namespace, as the kernel shows it to the sidecar on a cgroup v1 node with the kubelet's root
// in /var/lib/kubelet: per process its cmdline, stat, cgroup and mountinfo. The real node's
// kernel and kubelet are TestRealSecretsSidecar's (e2e).
func fakeProcTree(t *testing.T, ps []fakeProcess) string {
	t.Helper()
	root := t.TempDir()
	for _, p := range ps {
		dir := filepath.Join(root, strconv.Itoa(p.pid))
		cg := p.cgroup
		if cg == "" {
			cg = fmt.Sprintf("12:pids:/kubepods/besteffort/pod1f0e/%s-id\n4:memory:/kubepods/besteffort/pod1f0e/%s-id\n", p.container, p.container)
		}
		mounts := "1300 1200 0:87 / / rw,relatime - overlay overlay rw,lowerdir=/var/lib/containerd/l1\n" +
			"1301 1300 0:5 / /proc rw,nosuid - proc proc rw\n"
		if p.container != "" && !p.unshared {
			mounts += fmt.Sprintf("1302 1300 254:1 /var/lib/kubelet/pods/1f0e/containers/%s/%s /dev/termination-log rw,relatime - ext4 /dev/vda1 rw\n", p.container, p.log)
		}
		mounts += "1303 1300 0:90 /var/lib/kubelet/pods/1f0e/volumes/kubernetes.io~empty-dir/secrets /run/secrets ro - tmpfs tmpfs rw\n"
		files := map[string]string{
			"cmdline":   strings.Join(p.argv, "\x00") + "\x00",
			"stat":      fmt.Sprintf("%d (a name) with) S %d 1 1 0", p.pid, p.ppid),
			"cgroup":    cg,
			"mountinfo": mounts,
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, content := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	os.MkdirAll(filepath.Join(root, "self"), 0o755) // not a PID: skipped
	return root
}

// podProcesses is a pod with a restart secret: the pause process, the sidecar and its probe,
// a service started by a `#!/bin/sh` script (argv[0] /bin/sh) with its program as a child and
// a grandchild that left the mount namespace, and a companion, also a script, whose child has
// the service program's name; and an ephemeral debug container.
var podProcesses = []fakeProcess{
	{pid: 1, argv: []string{"/pause"}, cgroup: "12:pids:/kubepods/besteffort/pod1f0e/sandbox-id\n"},
	{pid: 7, argv: []string{"/slipway-secrets", "run"}, container: "secrets", log: "0a1b"},
	{pid: 8, argv: []string{"/slipway-secrets", "check"}, container: "secrets", log: "0a1b"},
	{pid: 9, argv: []string{"/bin/sh", "/app/run.sh"}, container: "service", log: "9c8d"},
	{pid: 10, ppid: 9, argv: []string{"/usr/bin/app", "-c", "/run/secrets/app.conf"}, container: "service", log: "9c8d"},
	{pid: 11, ppid: 10, argv: []string{"/usr/bin/helper"}, container: "service", log: "9c8d", unshared: true},
	{pid: 12, argv: []string{"/bin/sh", "/bin/companion"}, container: "companion", log: "77aa"},
	{pid: 13, ppid: 12, argv: []string{"/usr/bin/app"}, container: "companion", log: "77aa"},
	{pid: 20, argv: []string{"/bin/sh"}, container: "debugger-x7q", log: "5e5e"},
}

// without is ps without the processes of pids.
func without(ps []fakeProcess, pids ...int) []fakeProcess {
	var out []fakeProcess
	for _, p := range ps {
		if !containsInt(pids, p.pid) {
			out = append(out, p)
		}
	}
	return out
}

func containsInt(s []int, n int) bool {
	for _, x := range s {
		if x == n {
			return true
		}
	}
	return false
}

// TestTargets: a restart stops the first process of the service's container, found by the
// kubelet's termination log in its mount table and its cgroup, whatever its command: a
// script's /bin/sh, a wrapper that exec'd. Never the pause process, the sidecar or its probe,
// the companion (even a child of it with the service program's name) or a debug container.
// When the containers cannot be told apart, nothing is stopped and the error says why.
func TestTargets(t *testing.T) {
	sameCgroup := func(ps []fakeProcess) []fakeProcess {
		out := append([]fakeProcess(nil), ps...)
		for i := range out {
			out[i].cgroup = "0::/\n"
		}
		return out
	}
	restarted := append([]fakeProcess(nil), podProcesses...)
	for i := range restarted {
		if restarted[i].container == "service" {
			restarted[i].pid += 100
			restarted[i].log = "ffff" // a new start of the container: a new termination log
			if restarted[i].ppid != 0 {
				restarted[i].ppid += 100
			}
		}
	}
	sidecarNotFromKubelet := append([]fakeProcess(nil), podProcesses...)
	sidecarNotFromKubelet[1].unshared = true
	tests := []struct {
		name    string
		ps      []fakeProcess
		want    []int
		wantErr string
	}{
		{"a script's service beside a script's companion", podProcesses, []int{9}, ""},
		{"the service started again", restarted, []int{109}, ""},
		{"no companion", without(podProcesses, 12, 13), []int{9}, ""},
		{"the service not started yet", without(podProcesses, 9, 10, 11), nil, ""},
		{"a child whose parent ended", without(podProcesses, 9), []int{10}, ""},
		{"one cgroup for every container", sameCgroup(podProcesses), nil, "containers cannot be told apart by cgroup"},
		{"the sidecar without a kubelet termination log", sidecarNotFromKubelet, nil, "no kubelet termination log at /dev/termination-log"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var killed []int
			p := procs{root: fakeProcTree(t, tt.ps), self: 7, kill: func(pid int, sig syscall.Signal) error {
				if sig != syscall.SIGTERM {
					t.Errorf("signal %v", sig)
				}
				killed = append(killed, pid)
				return nil
			}}
			_, err := p.stop("service")
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("error %v, want %q", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, killed); diff != "" {
				t.Errorf("stopped (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRestartStopsService: a changed restart secret stops the service's container in the
// stand-in /proc tree, only after a change, not on the first write; the mark is cleared.
func TestRestartStopsService(t *testing.T) {
	s, f, srv := setup(t)
	var killed []int
	s.Proc, s.pid = fakeProcTree(t, podProcesses), 7
	s.kill = func(pid int, _ syscall.Signal) error { killed = append(killed, pid); return nil }
	if err := s.Round(context.Background(), srv); err != nil {
		t.Fatal(err)
	}
	if len(killed) > 0 {
		t.Fatalf("the first write stopped %v", killed)
	}
	f.set("web/db", "password", "rotated")
	if err := s.Round(context.Background(), srv); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{9}, killed); diff != "" {
		t.Errorf("stopped (-want +got):\n%s", diff)
	}
	if got := read(t, s.Cfg.Dir, "db-password"); got != "rotated" {
		t.Errorf("db-password %q", got)
	}
	if exists(s.Cfg.Dir, pendingRestart) {
		t.Error("the restart mark stays after the stop")
	}
}

// TestRestartRefusedKeepsMark: when the service's container cannot be told apart, the round
// fails saying why, nothing is stopped, and the mark stays for the next round.
func TestRestartRefusedKeepsMark(t *testing.T) {
	s, f, srv := setup(t)
	ps := append([]fakeProcess(nil), podProcesses...)
	ps[1].unshared = true
	s.Proc, s.pid = fakeProcTree(t, ps), 7
	s.kill = func(pid int, _ syscall.Signal) error { t.Errorf("stopped %d", pid); return nil }
	if err := s.Round(context.Background(), srv); err != nil {
		t.Fatal(err)
	}
	f.set("web/db", "password", "rotated")
	err := s.Round(context.Background(), srv)
	if err == nil || !strings.Contains(err.Error(), "restart of container service: the sidecar's own mount table has no kubelet termination log") {
		t.Errorf("error %v", err)
	}
	if !exists(s.Cfg.Dir, pendingRestart) {
		t.Error("the restart mark is gone though nothing was stopped")
	}
}

// TestChangeWhileDown: a sidecar that starts on a volume with an older value of a restart
// secret (changed while it was down) stops the service; so does one that finds the restart
// mark a dead sidecar left.
func TestChangeWhileDown(t *testing.T) {
	for _, tt := range []struct {
		name    string
		prepare func(t *testing.T, dir string)
	}{
		{"older value on the volume", func(t *testing.T, dir string) {
			writeAtomic(dir, "db-password", []byte("before"))
		}},
		{"restart mark left", func(t *testing.T, dir string) {
			for name, v := range map[string]string{"db-password": "s3cret", "db-url": "postgres://db/app", "tls.key": "binary\x00data", "app.conf": "password=s3cret port=5432\n"} {
				writeAtomic(dir, name, []byte(v))
			}
			markPending(dir, true)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, _, srv := setup(t)
			var killed []int
			s.Proc, s.pid = fakeProcTree(t, podProcesses), 7
			s.kill = func(pid int, _ syscall.Signal) error { killed = append(killed, pid); return nil }
			tt.prepare(t, s.Cfg.Dir)
			if err := s.Round(context.Background(), srv); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]int{9}, killed); diff != "" {
				t.Errorf("stopped (-want +got):\n%s", diff)
			}
		})
	}
}
