package engine

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/engine/migrate"
	"slipway.dev/slipway/internal/engine/publish"
	"slipway.dev/slipway/internal/engine/rollout"
	"slipway.dev/slipway/internal/engine/sharedreads"
	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/plan"
)

// The engine reaches the cluster only through these interfaces, so its decisions can be
// tested against a stand-in (enginetest.Cluster); *kube.Client satisfies Cluster.

// scaler sets a Deployment's replicas: suspend, resume and the roles.
type scaler interface {
	Scale(ctx context.Context, ns, name string, replicas int32) (int64, error)
}

// rolloutWatcher follows rollouts: the watch, and a failed pod's last log lines.
type rolloutWatcher interface {
	Watch(ctx context.Context, ns string) (lane.DeploymentWatch, error)
	PodLogTail(ctx context.Context, ns, pod, container string, n int64) string
}

// clusterReader reads what plan, status and the pre-flight checks need.
type clusterReader interface {
	Ping(ctx context.Context) (string, error)
	RuntimeClassExists(ctx context.Context, name string) (bool, error)
	Namespace(ctx context.Context, ns string) (*unstructured.Unstructured, error)
	ListManaged(ctx context.Context, ns, selector string) (map[plan.Key]*unstructured.Unstructured, error)
	// ListManagedObjects is ListManaged with the built-in kinds typed: what a plan reads.
	ListManagedObjects(ctx context.Context, ns, selector string) (map[plan.Key]plan.Object, error)
	ListWorkloads(ctx context.Context, ns, selector string) (*kube.Workloads, error)
	StopSignalSupported(ctx context.Context, ns string) (bool, error)
	// ServiceIngress is a LoadBalancer Service's addresses: what a node's names point at.
	ServiceIngress(ctx context.Context, ns, name string) ([]string, error)
	ServesKind(ctx context.Context, gvk schema.GroupVersionKind) (bool, error)
}

// Cluster is every call the engine makes to Kubernetes.
type Cluster interface {
	rollout.Cluster // apply, replace, delete, read an object whole, claims' binding (SPEC §6)
	scaler
	migrate.Cluster // the removal Job of a copy of /var/lib (SPEC §6a)
	rolloutWatcher
	clusterReader
	publish.Cluster // the Gateway, routes and load-balancer addresses (SPEC §7)
	// DeleteNamespaceAndWait deletes namespace ns of UID uid (the one judged the group's)
	// and waits until it is gone.
	DeleteNamespaceAndWait(ctx context.Context, ns, uid string) error
}

var _ Cluster = (*kube.Client)(nil)

// SharedSource is what SharedReads reads through; *kube.Client satisfies it.
type SharedSource interface {
	Cluster
	// ListNamespaces lists the namespaces that carry selector, by name.
	ListNamespaces(ctx context.Context, selector string) (map[string]*unstructured.Unstructured, error)
}

var _ SharedSource = (*kube.Client)(nil)

// SharedReads is a Cluster for the engines of one wave run: the reads internal/engine/sharedreads
// shares (a covered namespace's objects, workloads and namespace) served from them, every other
// call to the cluster as it is. The shared reads' methods are promoted over the cluster's, which
// sit one level deeper (in source).
type SharedReads struct {
	*sharedreads.Reads
	source
}

type source struct{ Cluster }

// NewSharedReads returns the shared reads of a wave run over src.
func NewSharedReads(src SharedSource) *SharedReads {
	return &SharedReads{Reads: sharedreads.New(src), source: source{src}}
}

var _ Cluster = (*SharedReads)(nil)
