package devcluster

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// StorageClass is the dev cluster's default StorageClass (kwok's provisioner, hostPath volumes
// under the data directory's volumes/).
const StorageClass = "kwok-volume"

// volumesMain is tools/volumes/main.go (copied by pins/gen.sh): the volume reaper.
//
//go:embed pins/volumes.go.txt
var volumesMain []byte

// volumesBin names the reaper's binary after its source, as registryBin does.
var volumesBin = func() string {
	h := sha256.Sum256(volumesMain)
	return "volumes-" + hex.EncodeToString(h[:4])
}()

// reaperProc is the reaper's name in pids/ and logs/.
const reaperProc = "volumes"

// volumesDir is where the dev StorageClass's volumes live: hostPath directories the real
// node's kubelet creates, removed with the data directory by dev down.
func (e *Env) volumesDir() string { return filepath.Join(e.Dir, "volumes") }

// reaperRunning reports whether the volume reaper of the cluster in dir runs (a reaper of
// any version: its binary is named after its source).
func reaperRunning(dir string) (int, bool) {
	pid, err := readPID(filepath.Join(dir, "pids", reaperProc))
	if err != nil || !alive(pid) {
		return 0, false
	}
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	return pid, err == nil && strings.HasPrefix(filepath.Base(exe), "volumes-")
}

// ensureReaper starts the volume reaper unless one of this version runs; one of another
// version is replaced.
func (e *Env) ensureReaper(bin string) error {
	if pid, ok := reaperRunning(e.Dir); ok {
		if runsBinary(pid, volumesBin) {
			return nil
		}
		stopPID(pid, 5*time.Second)
	}
	if err := os.MkdirAll(e.volumesDir(), 0o755); err != nil {
		return err
	}
	_, err := e.startExec(reaperProc, bin, []string{"-kubectl", e.Kubectl(), "-kubeconfig", e.Kubeconfig,
		"-dir", e.volumesDir(), "-class", StorageClass})
	return err
}

// stopReaper stops the volume reaper of the cluster in dir.
func stopReaper(dir string) {
	if pid, ok := reaperRunning(dir); ok {
		stopPID(pid, 5*time.Second)
	}
	_ = os.Remove(filepath.Join(dir, "pids", reaperProc))
}
