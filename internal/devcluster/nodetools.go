package devcluster

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"io"
	"path/filepath"
)

// Versions of the real node's runtime (docs/dev-cluster.md). containerd 2 with runc >= 1.2:
// the kubelet runs a hostUsers: false pod (every pod slipway renders) only on a runtime that
// reports user namespaces, which Debian's containerd 1.6 and runc 1.1 do not.
const (
	ContainerdVersion = "v2.4.2"
	RuncVersion       = "v1.5.3"
)

// pauseMain is tools/pause/main.go (copied by pins/gen.sh): the pod sandbox's program.
//
//go:embed pins/pause.go.txt
var pauseMain []byte

// pauseBin names the pause binary after its source, as registryBin does.
var pauseBin = func() string {
	h := sha256.Sum256(pauseMain)
	return "pause-" + hex.EncodeToString(h[:4])
}()

// runcSystemdMain is tools/runc-systemd/main.go (copied by pins/gen.sh): the OCI runtime of
// the RuntimeClass systemd, a wrapper of runc.
//
//go:embed pins/runc-systemd.go.txt
var runcSystemdMain []byte

// runcSystemdBin names the wrapper's binary after its source, as registryBin does.
var runcSystemdBin = func() string {
	h := sha256.Sum256(runcSystemdMain)
	return "runc-systemd-" + hex.EncodeToString(h[:4])
}()

// nodeTools are the real node's parts, each cached apart (so none of them touches the
// cluster's key): the kubelet from the same Kubernetes pins as the cluster (tools/kubelet
// holds exactly tools/kube's versions, so the Go build cache the cluster's build filled
// serves it and only the kubelet's own packages compile), containerd and its shim, runc (cgo,
// for seccomp: Debian's libseccomp-dev) and the pause program.
var nodeTools = []tool{
	{module: "kubelet", from: "k8s.io/kubernetes " + KubeVersion, pkgs: []string{"k8s.io/kubernetes/cmd/kubelet"},
		bins: []string{"kubelet"}, ldflags: kubeLdflags, own: true, node: true},
	{module: "containerd", from: "github.com/containerd/containerd/v2 " + ContainerdVersion,
		pkgs: []string{"github.com/containerd/containerd/v2/cmd/containerd", "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"},
		bins: []string{"containerd", "containerd-shim-runc-v2"},
		// The version is stamped in, as the kubelet reports it on the node (containerd://2.4.2).
		ldflags: "-s -w -X github.com/containerd/containerd/v2/version.Version=" + ContainerdVersion[1:],
		tags:    "no_btrfs,no_devmapper,no_zfs,urfave_cli_no_docs", own: true, node: true},
	{module: "runc", from: "github.com/opencontainers/runc " + RuncVersion, pkgs: []string{"github.com/opencontainers/runc"},
		bins: []string{"runc"}, ldflags: "-s -w -X main.version=" + RuncVersion[1:],
		// Without runc's default libpathrs tag, which needs a Rust library.
		tags: "seccomp,urfave_cli_no_docs", cgo: true, own: true, node: true},
	{module: "pause", from: "slipway.dev/slipway/tools/pause", pkgs: []string{"./" + pauseBin}, bins: []string{pauseBin},
		ldflags: "-s -w", own: true, node: true, src: map[string][]byte{pauseBin + "/main.go": pauseMain}},
	{module: "runc-systemd", from: "slipway.dev/slipway/tools/runc-systemd", pkgs: []string{"./" + runcSystemdBin}, bins: []string{runcSystemdBin},
		ldflags: "-s -w", own: true, node: true, src: map[string][]byte{runcSystemdBin + "/main.go": runcSystemdMain}},
	{module: "volumes", from: "slipway.dev/slipway/tools/volumes", pkgs: []string{"./" + volumesBin}, bins: []string{volumesBin},
		ldflags: "-s -w", own: true, node: true, src: map[string][]byte{volumesBin + "/main.go": volumesMain}},
}

// nodeBinaries are the paths of the real node's programs.
type nodeBinaries struct {
	kubelet, containerd, shimDir, runc, runcSystemd, pause, volumes string
}

// ensureNodeBinaries builds the real node's parts missing from their caches, with progress.
func ensureNodeBinaries(ctx context.Context, progress io.Writer) (nodeBinaries, error) {
	var b nodeBinaries
	for _, t := range nodeTools {
		bin, _, err := ensureTool(ctx, t.module, progress)
		if err != nil {
			return b, fmt.Errorf("real node: %w", err)
		}
		switch t.module {
		case "kubelet":
			b.kubelet = bin
		case "containerd":
			b.containerd, b.shimDir = bin, filepath.Dir(bin)
		case "runc":
			b.runc = bin
		case "pause":
			b.pause = bin
		case "runc-systemd":
			b.runcSystemd = bin
		case "volumes":
			b.volumes = bin
		}
	}
	return b, nil
}
