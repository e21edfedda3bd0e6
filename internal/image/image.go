// Package image builds the OCI image of a node and publishes it to a registry (SPEC §4).
//
// A build is reproducible: a rootfs directory becomes one tar layer with sorted entries, fixed
// timestamps (SOURCE_DATE_EPOCH, else 0) and root-owned entries, so the same tree gives
// byte-identical images wherever it lies and whenever its files were touched. The tag of an
// image derives from its config digest, which covers the layers' content, the command and the
// labels; a push first asks the registry for that tag and uploads nothing when it is there.
//
// It assumes a registry that speaks the OCI distribution API (CNCF Distribution and peers),
// credentials in a docker config file, and plain HTTP only towards loopback registries unless
// the caller says otherwise. The package never prints: warnings are returned and progress goes
// to an event callback. It knows nothing of the group file; the caller maps a node to a Source.
package image

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// ServedLabel is the image label that lists the ports a node serves, as comma-separated
// `<protocol>/<port>` items, e.g. "tcp/22,tcp/80,udp/53" (SPEC §4).
const ServedLabel = "dev.slipway.firewall.served"

// DefaultCommand is the command of an image built from a rootfs when the node sets none.
var DefaultCommand = []string{"/sbin/init"}

// Source says what an image is built from: exactly one of Rootfs, Archive, Base and Binaries
// is set. Paths are absolute.
type Source struct {
	// Rootfs is a directory that becomes the image's one layer.
	Rootfs string
	// Archive is a docker-archive or an OCI-layout tarball, pushed as it is.
	Archive string
	// Base is an image reference pulled from its registry; Add is layered on top of it.
	Base string
	Add  []AddFile
	// Binaries is a program per platform, built into an image index (binaries.go).
	Binaries *Binaries
	// Command becomes the image's entrypoint (with no Cmd), so arguments a Deployment gives
	// are appended to it. Empty means /sbin/init for a rootfs and the image's own otherwise.
	Command []string
	// Labels are set on the image config. For an Archive, Command and Labels change the image
	// (and so its digest) only when they differ from what the archive already holds: leave
	// them empty to push an archive exactly as it is.
	Labels map[string]string
	// StopSignal is the image config's stop signal: the runtime sends it to stop a container
	// whose pod names none (containerd's and CRI-O's CRI do), e.g. SIGRTMIN+3, on which
	// systemd as PID 1 shuts down (on SIGTERM it re-executes itself and runs on). Empty: the
	// image's own. Like Command, it changes an archive only when it differs.
	StopSignal string
	// User is the image config's User (`uid[:gid]` or a name); empty: none for a Rootfs, the
	// image's own otherwise. Like Command, it changes an archive only when it differs.
	User string
	// Context is the directory Rootfs, Archive and the Add sources lie in (the group file's):
	// every read of them goes through it and fails on a link leading out, even one made after
	// the paths were checked. Empty: no such limit (a caller's own paths).
	Context string
}

// AddFile puts the file or directory Src of the local disk at the absolute path Dst.
type AddFile struct {
	Src string
	Dst string
}

// Options say where images go and how to reach the registry.
type Options struct {
	// Registry is host[:port][/path]; required by anything that talks to a registry.
	Registry string
	// Insecure allows plain HTTP to a registry that is not on loopback.
	Insecure bool
	// AuthFile is a docker config file; a missing file means anonymous access, unless
	// AuthFileSetting names the flag or variable that set it: a path given explicitly must be
	// there.
	AuthFile        string
	AuthFileSetting string
	// TreeIndex is the file where a builder remembers the content digests of rootfs trees,
	// so an unchanged tree is not read again (treeindex.go); "" keeps none.
	TreeIndex string
}

// Builder makes images from sources.
type Builder interface {
	// Build returns the image of src and the warnings of the build (files skipped).
	Build(ctx context.Context, src Source) (v1.Image, []string, error)
	// Tag returns the tag derived from the image content.
	Tag(img v1.Image) (string, error)
}

// Publisher puts images into a registry.
type Publisher interface {
	// Lookup asks the registry for ref (a tag) and returns its digest when it is there.
	Lookup(ctx context.Context, ref string) (v1.Hash, bool, error)
	// Publish uploads img as ref, skipping every blob the registry already has, and reports
	// upload progress (bytes done of total) to progress when it is not nil.
	Publish(ctx context.Context, ref string, img v1.Image, progress func(done, total int64)) (name.Digest, error)
}

// ErrNoRegistry is returned when a registry is needed and none is set.
var ErrNoRegistry = errors.New("no registry set: set K8S_REGISTRY (or --registry) to the registry node images are pushed to")

// Repository returns `<registry>/<namespace>/<name>`, the repository of a node image (name is
// the node) or of a role's service image (name is `<node>-<role>`).
func Repository(registry, namespace, name string) string {
	return strings.TrimSuffix(registry, "/") + "/" + namespace + "/" + name
}

// TagFor returns the tag of an image: "c-" and the first 16 hex digits of its config digest.
// The config names every layer by its uncompressed digest, the command and the labels, so an
// unchanged node keeps its tag, and an archive keeps the tag of its own config.
func TagFor(img v1.Image) (string, error) {
	h, err := img.ConfigName()
	if err != nil {
		return "", fmt.Errorf("image config digest: %w", err)
	}
	if len(h.Hex) < 16 {
		return "", fmt.Errorf("image config digest %s: too short", h)
	}
	return "c-" + h.Hex[:16], nil
}

// Label returns the value of the label key in img's config, "" when it has none. It reads the
// raw config for its labels alone: v1.ConfigFile's parse (times, history, every field) cost a
// 1,000-node plan 33 ms of CPU for one label per node (issue 17).
func Label(img v1.Image, key string) (string, error) {
	cf, err := configOf(img)
	return cf.Config.Labels[key], err
}

// User returns the User of img's config ("" none), read as Label reads a label.
func User(img v1.Image) (string, error) {
	cf, err := configOf(img)
	return cf.Config.User, err
}

// rawConfig is the part of an image config Label and User read.
type rawConfig struct {
	Config struct {
		Labels map[string]string `json:"Labels"`
		User   string            `json:"User"`
	} `json:"config"`
}

func configOf(img v1.Image) (rawConfig, error) {
	var cf rawConfig
	raw, err := img.RawConfigFile()
	if err != nil {
		return cf, fmt.Errorf("image config: %w", err)
	}
	if err := json.Unmarshal(raw, &cf); err != nil {
		return cf, fmt.Errorf("image config: %w", err)
	}
	return cf, nil
}
