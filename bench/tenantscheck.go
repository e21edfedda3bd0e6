package main

// The tenants mode's cross-write check: each deployment's namespace read right after its own
// run, and again once every run has ended.

import (
	"context"
	"fmt"
	"log"
	"time"

	"slipway.dev/slipway/internal/kube"
)

// TenantsResult is the tenants mode's figures beyond the steps.
type TenantsResult struct {
	Deployments int `json:"deployments"`
	Nodes       int `json:"nodesPerDeployment"`
	Runs        int `json:"runsAtOnce"`
	// RunSeconds are the first apply's runs' wall times, sorted.
	RunSeconds []float64 `json:"runSeconds"`
	// Failed are the runs that failed, of every step; LostLocks those of them that failed on
	// a lock.
	Failed    int `json:"failedRuns"`
	LostLocks int `json:"lostLocks"`
	// CrossWrites are objects of a deployment removed, replaced or written by slipway after
	// its own run ended; OtherChanges objects whose resourceVersion moved with no write of
	// slipway's after that (the cluster's controllers).
	CrossWrites  int `json:"crossWrites"`
	OtherChanges int `json:"otherChanges"`
}

// objView is one object as the check compares it.
type objView struct {
	uid, rv string
	// slipway is the latest time slipway's field manager wrote the object.
	slipway time.Time
}

// nsView is a namespace's objects of the kinds slipway makes (Kind/name), the namespace too.
type nsView map[string]objView

func (b *bench) readNS(ctx context.Context, ns string) (nsView, error) {
	live, err := b.kc.ListManaged(ctx, ns, "")
	if err != nil {
		return nil, err
	}
	v := nsView{}
	for k, o := range live {
		ov := objView{uid: string(o.GetUID()), rv: o.GetResourceVersion()}
		for _, m := range o.GetManagedFields() {
			if m.Manager == kube.FieldManager && m.Time != nil && m.Time.After(ov.slipway) {
				ov.slipway = m.Time.Time
			}
		}
		v[k.Kind+"/"+k.Name] = ov
	}
	return v, nil
}

// crossWrites reads every deployment's namespace again and compares it with what its own run
// left (seen, at end): an object gone, replaced (another UID) or written by slipway after
// the run's end (managedFields' times have 1 s resolution: after end + 1 s) is a cross
// write; a new object in the namespace too.
func (b *bench) crossWrites(ctx context.Context, deps []tenantDep, seen []nsView, ends []time.Time) {
	tr := b.res.Tenants
	for i, d := range deps {
		if seen[i] == nil {
			continue // its run failed, or its namespace could not be read: counted apart
		}
		now, err := b.readNS(ctx, d.ns)
		if err != nil {
			b.note(fmt.Sprintf("cross writes: read %s: %v", d.ns, err))
			continue
		}
		cross := func(what string) {
			tr.CrossWrites++
			b.note(fmt.Sprintf("cross write in %s: %s", d.ns, what))
		}
		for k, was := range seen[i] {
			is, ok := now[k]
			switch {
			case !ok:
				cross(k + " gone")
			case is.uid != was.uid:
				cross(k + " replaced")
			case is.rv == was.rv:
			case is.slipway.After(ends[i].Add(time.Second)):
				cross(fmt.Sprintf("%s written by slipway at %s, its run ended at %s", k, is.slipway.Format(time.TimeOnly), ends[i].Format(time.TimeOnly)))
			default:
				tr.OtherChanges++
			}
		}
		for k := range now {
			if _, ok := seen[i][k]; !ok {
				cross(k + " appeared")
			}
		}
	}
	log.Printf("cross writes %d, other changes %d, over %d deployments", tr.CrossWrites, tr.OtherChanges, len(deps))
}
