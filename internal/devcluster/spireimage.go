package devcluster

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// SpireAgentImage is the repository and tag of the agent image in the dev registry: Debian's
// static busybox (BusyboxRootfs) and /usr/bin/spire-agent, for the nodes of a group with
// spire: (image.base). dev env names it by digest (SLIPWAY_DEV_SPIRE_AGENT_IMAGE).
const SpireAgentImage = "slipway-dev/spire-agent:" + SpireVersion

// SpireAgentPath is where the agent image holds spire-agent.
const SpireAgentPath = "/usr/bin/spire-agent"

// pushAgentImage pushes the agent image unless the registry's tag already names it, and
// returns its reference by digest. Its tree and layer are cached beside the SPIRE binaries,
// made once.
func (e *Env) pushAgentImage(ctx context.Context, agentBin string, progress io.Writer) (string, error) {
	tree, err := agentTree(ctx, agentBin)
	if err != nil {
		return "", fmt.Errorf("dev cluster: spire agent image: %w", err)
	}
	img, digest, err := baseImage(tree, []string{"/bin/sh"})
	if err != nil {
		return "", fmt.Errorf("dev cluster: spire agent image: %w", err)
	}
	ref, err := name.ParseReference(e.Registry+"/"+SpireAgentImage, name.Insecure)
	if err != nil {
		return "", fmt.Errorf("dev cluster: spire agent image: %w", err)
	}
	byDigest := ref.Context().Digest(digest.String()).String()
	if d, err := remote.Head(ref, remote.WithContext(ctx)); err == nil && d.Digest == digest {
		return byDigest, nil
	}
	if err := remote.Write(ref, img, remote.WithContext(ctx)); err != nil {
		return "", fmt.Errorf("dev cluster: spire agent image: push: %w", err)
	}
	fmt.Fprintf(progress, "dev: pushed %s\n", byDigest)
	return byDigest, nil
}

// agentTree is the agent image's tree: a busybox rootfs and spire-agent, in the directory of
// agentBin's cache (its pins fix the agent), keyed by the busybox binary as busyboxTree is.
func agentTree(ctx context.Context, agentBin string) (string, error) {
	key, err := busyboxKey()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(filepath.Dir(filepath.Dir(agentBin)), "agent-image-"+key)
	return cachedTree(ctx, dir, SpireAgentPath, func(partial string) error {
		if err := BusyboxRootfs(ctx, partial); err != nil {
			return err
		}
		src, err := os.Open(agentBin)
		if err != nil {
			return err
		}
		defer src.Close()
		return copyFile(src, filepath.Join(partial, SpireAgentPath), 0o755)
	})
}
