package state

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"

	"slipway.dev/slipway/internal/kube"

	"slipway.dev/slipway/internal/spec"
)

// KubeAccess is the part of *kube.Client the kubernetes backend uses.
type KubeAccess interface {
	StateSecrets(ns string) kube.StateObjects[kube.StateSecret]
	ListStateSecrets(ctx context.Context, ns string, match map[string]string) ([]kube.StateSecret, error)
	StateLeases(ns string) kube.StateObjects[kube.StateLease]
	EnsureNamespace(ctx context.Context, name string, labels map[string]string) error
}

var _ KubeAccess = (*kube.Client)(nil)

const (
	labelComponent = "app.kubernetes.io/component"
	annoLockInfo   = "slipway.dev/lock-info"
	annoSerial     = "slipway.dev/serial"
	annoLineage    = "slipway.dev/lineage"
	secretKey      = "state.json.gz"
	// MaxSecretState is the largest compressed state the backend writes: the API server
	// refuses objects over 1 MiB, and the Secret carries labels and annotations besides.
	MaxSecretState  = 1000 * 1024
	conflictRetries = 8
)

// kubeBackend keeps a group's state in Secret slipway-state-<group> (gzip JSON, written with a
// resourceVersion precondition, so the serial check and the write are one atomic step) and its
// lock in Lease slipway-lock-<group>, as OpenTofu's kubernetes backend does. The holder renews
// the Lease every third of its duration while it runs; a Lease whose renew time is older than
// its duration is taken over by the next Lock, which says so through Notify. Expiry is judged
// by this host's clock against the renew time the holder wrote: hosts are assumed to agree on
// the time within a fraction of the lease duration.
type kubeBackend struct {
	ns    string
	group string
	kube  KubeAccess
	o     options
	// secrets and leases are the namespace's: the state's Secret, the lock's Lease.
	secrets kube.StateObjects[kube.StateSecret]
	leases  kube.StateObjects[kube.StateLease]

	mu   sync.Mutex
	held *renewal // the lock this backend took and renews, if any
}

type renewal struct {
	id   string
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	lost bool
}

func newKubeBackend(ns, group string, k KubeAccess, o options) *kubeBackend {
	return &kubeBackend{ns: ns, group: group, kube: k, o: o, secrets: k.StateSecrets(ns), leases: k.StateLeases(ns)}
}

func (b *kubeBackend) Location() string   { return "kubernetes://" + b.ns }
func (b *kubeBackend) secretName() string { return "slipway-state-" + b.group }
func (b *kubeBackend) leaseName() string  { return "slipway-lock-" + b.group }
func (b *kubeBackend) where() string      { return b.ns + "/" + b.secretName() }

// namespaceLabels mark a namespace the backend creates as made by slipway for the group, as
// apply marks the namespace it creates: with the state in the group's own namespace
// (kubernetes://N), the lock creates N first, and N is then still the group's to destroy.
func (b *kubeBackend) namespaceLabels() map[string]string {
	return map[string]string{spec.LabelManagedBy: spec.ManagedBy, spec.LabelGroup: b.group}
}

func (b *kubeBackend) labels() map[string]string {
	return map[string]string{spec.LabelManagedBy: spec.ManagedBy, labelComponent: "state", spec.LabelGroup: b.group}
}

func (b *kubeBackend) Read(ctx context.Context) (*Document, error) {
	_, d, err := b.get(ctx)
	if err != nil {
		return nil, err
	}
	return checkGroup("secret "+b.where(), b.group, d)
}

// get returns the Secret (nil: none) and its document (nil: none).
func (b *kubeBackend) get(ctx context.Context) (*kube.StateSecret, *Document, error) {
	s, err := b.secrets.Get(ctx, b.secretName())
	if errors.Is(err, kube.ErrObjectNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("state %s: read: %w", b.group, err)
	}
	if err := b.ours(s); err != nil {
		return nil, nil, err
	}
	data, ok := s.Data[secretKey]
	if !ok || len(data) == 0 {
		return s, nil, nil
	}
	raw, err := gunzip(data)
	if err != nil {
		return nil, nil, fmt.Errorf("state %s: secret %s: %w", b.group, b.where(), err)
	}
	d, err := Decode("secret "+b.where(), raw)
	return s, d, err
}

func (b *kubeBackend) Write(ctx context.Context, d *Document) error {
	if b.lockLost() {
		return fmt.Errorf("state %s: write refused: %w", b.group, ErrLockLost)
	}
	for range conflictRetries {
		s, stored, err := b.get(ctx)
		if err != nil {
			return err
		}
		next, gz, err := checkWrite(b.group, headOf(stored), d, EncodeGzip)
		if err != nil {
			return err
		}
		if len(gz) > MaxSecretState {
			return fmt.Errorf("state %s: write refused: %d bytes compressed is over the %d bytes a Secret can hold", b.group, len(gz), MaxSecretState)
		}
		out := &kube.StateSecret{Name: b.secretName(), Labels: b.labels(),
			Annotations: map[string]string{annoSerial: fmt.Sprint(next.Serial), annoLineage: next.Lineage},
			Data:        map[string][]byte{secretKey: gz}}
		if s == nil {
			if err := b.kube.EnsureNamespace(ctx, b.ns, b.namespaceLabels()); err != nil {
				return fmt.Errorf("state %s: write: %w", b.group, err)
			}
			_, err = b.secrets.Create(ctx, out)
		} else {
			out.ResourceVersion = s.ResourceVersion
			_, err = b.secrets.Update(ctx, out)
		}
		if errors.Is(err, kube.ErrObjectConflict) {
			continue // another write got in between: read again; the serial check decides
		}
		if err != nil {
			return fmt.Errorf("state %s: write: %w", b.group, err)
		}
		commit(d, next)
		return nil
	}
	return fmt.Errorf("state %s: write: secret %s kept changing under %d attempts", b.group, b.where(), conflictRetries)
}

// ours refuses a Secret of the state's name that slipway did not make for the group (issue
// 35): someone else's is neither read, overwritten nor deleted.
func (b *kubeBackend) ours(s *kube.StateSecret) error {
	var lacks []string
	for _, k := range slices.Sorted(maps.Keys(b.labels())) {
		if v := b.labels()[k]; s.Labels[k] != v {
			lacks = append(lacks, k+"="+v)
		}
	}
	if len(lacks) == 0 {
		return nil
	}
	return fmt.Errorf("state %s: secret %s exists and slipway did not make it for group %s (it lacks the labels %s): slipway will not read, overwrite or delete it; rename it, or keep the state elsewhere (--state)",
		b.group, b.where(), b.group, strings.Join(lacks, ", "))
}

func (b *kubeBackend) Delete(ctx context.Context) error {
	s, _, err := b.get(ctx)
	if err != nil || s == nil {
		return err
	}
	// The version judged ours: a Secret re-made by someone since is not deleted.
	err = b.secrets.Delete(ctx, b.secretName(), s.ResourceVersion)
	if err != nil && !errors.Is(err, kube.ErrObjectNotFound) {
		return fmt.Errorf("state %s: delete: %w", b.group, err)
	}
	return nil
}

// List returns the groups with a state Secret in the namespace.
func (b *kubeBackend) List(ctx context.Context) ([]string, error) {
	l, err := b.kube.ListStateSecrets(ctx, b.ns, map[string]string{spec.LabelManagedBy: spec.ManagedBy, labelComponent: "state"})
	if errors.Is(err, kube.ErrObjectNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("states in %s: list: %w", b.Location(), err)
	}
	var out []string
	for _, s := range l {
		if g := s.Labels[spec.LabelGroup]; g != "" {
			out = append(out, g)
		}
	}
	sort.Strings(out)
	return out, nil
}

// EncodeGzip returns the document as gzip-compressed JSON, as the kubernetes backend stores it.
func EncodeGzip(d *Document) ([]byte, error) {
	raw, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("state %s: encode: %w", d.Group, err)
	}
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.DefaultCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(raw); err != nil {
		return nil, fmt.Errorf("state %s: compress: %w", d.Group, err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("state %s: compress: %w", d.Group, err)
	}
	return buf.Bytes(), nil
}

func gunzip(data []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("decompress: %w", err)
	}
	defer zr.Close()
	// A state is at most a few MiB uncompressed; refuse a bomb.
	out, err := io.ReadAll(io.LimitReader(zr, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("decompress: %w", err)
	}
	return out, nil
}
