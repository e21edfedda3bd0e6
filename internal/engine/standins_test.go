package engine

import "slipway.dev/slipway/internal/engine/enginetest"

// The engine's tests play the cluster and the state store with enginetest's stand-ins, which
// its lanes' tests share; these names keep the root's tests short.
type (
	fakeCluster = enginetest.Cluster
	fakePublish = enginetest.Publish
	memStore    = enginetest.Store
)

var (
	newFakeCluster = enginetest.NewCluster
	applyOptions   = enginetest.ApplyOptions
	typedOrNot     = enginetest.TypedOrNot
	errDiskFull    = enginetest.ErrDiskFull
)

var _ Cluster = (*fakeCluster)(nil)
