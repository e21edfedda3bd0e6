package engine

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/render"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

// MachineIDs returns the machine ID of every node (FR-013): the state's; else the one its live
// Deployment already runs with (a state lost or moved to another backend must not give a
// running node a new identity); else a new random UUID. fresh lists, in the group's order,
// the nodes whose ID the state lacks. Role pods take their pod's UID (render): they have none.
func MachineIDs(g *spec.Group, doc *state.Document, live map[plan.Key]plan.Object, ns string) (ids map[string]string, fresh []string) {
	ids = map[string]string{}
	for _, n := range g.Nodes {
		id := ""
		if doc != nil && doc.Nodes[n.Name] != nil {
			id = doc.Nodes[n.Name].MachineID
		}
		if id == "" {
			fresh = append(fresh, n.Name)
			id = runningMachineID(live[plan.Key{Kind: "Deployment", Namespace: ns, Name: n.Name}])
		}
		if id == "" {
			id = uuid.NewString()
		}
		ids[n.Name] = id
	}
	return ids, fresh
}

// runningMachineID is the container_uuid a live Deployment gives its pods, "" when none.
func runningMachineID(d plan.Object) string {
	for _, c := range liveContainers(d) {
		for _, e := range c.Env {
			if e.Name == render.EnvMachineID {
				return e.Value
			}
		}
	}
	return ""
}

// RecordMachineIDs is render's side of FR-013 (SPEC §9: the same input renders the same
// bytes): it returns the machine ID of every node and writes those the state lacked into the
// state, so that the next render prints the same IDs and a later apply deploys them. The
// caller holds the lock. Without a cluster (Options.Kube nil) a new ID cannot be checked
// against a running Deployment; with one, a running node keeps the ID it runs with.
func (e *Engine) RecordMachineIDs(ctx context.Context, t Target) (ids map[string]string, recorded []string, err error) {
	doc, err := readAnyNamespace(ctx, t)
	if err != nil {
		return nil, nil, err
	}
	ids, fresh := MachineIDs(t.Group, doc, nil, t.Namespace)
	if len(fresh) == 0 {
		return ids, nil, nil
	}
	if e.o.Kube != nil {
		live, err := e.o.Kube.ListManagedObjects(ctx, t.Namespace, lane.GroupSelector(t.Group.Name))
		if err != nil {
			return nil, nil, fmt.Errorf("group %s: machine IDs: read the running Deployments: %w", t.Group.Name, err)
		}
		ids, fresh = MachineIDs(t.Group, doc, live, t.Namespace)
	}
	if doc == nil {
		doc = &state.Document{Group: t.Group.Name}
	}
	if doc.Nodes == nil {
		doc.Nodes = map[string]*state.NodeState{}
	}
	for _, n := range fresh {
		if doc.Nodes[n] == nil {
			doc.Nodes[n] = &state.NodeState{}
		}
		doc.Nodes[n].MachineID = ids[n]
	}
	if err := t.Store.Write(context.WithoutCancel(ctx), doc); err != nil {
		return nil, nil, fmt.Errorf("group %s: record machine IDs: %w", t.Group.Name, err)
	}
	return ids, fresh, nil
}
