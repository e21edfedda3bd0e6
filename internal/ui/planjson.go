package ui

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"slipway.dev/slipway/internal/plan"
)

// planCounts are a plan's totals as `plan -o json` names them (plan.Totals): the plan's own,
// then each lane's (records, recordConflicts, migrate, removeCopy, spire, central); a total a
// lane does not list (the move's) is left out.
type planCounts []plan.Count

// MarshalJSON writes the counts as one object, in order.
func (cs planCounts) MarshalJSON() ([]byte, error) {
	var ms []member
	for _, c := range cs {
		if !c.Unlisted {
			ms = append(ms, member{c.Key, c.N})
		}
	}
	return withMembers(struct{}{}, ms)
}

// planDoc is `plan -o json`: the plan without the rendered objects (those are for
// `plan -out`), the group's own objects (namespace, default-deny policy) under groupChanges
// rather than as a node named "", and after drift the changes of each lane that lists its
// own (plan.JSONLane: spire, central).
type planDoc struct {
	Version      int       `json:"version"`
	Group        string    `json:"group"`
	Namespace    string    `json:"namespace"`
	Created      time.Time `json:"created"`
	StateSerial  int64     `json:"stateSerial"`
	StateLineage string    `json:"stateLineage,omitempty"`
	Suspended    bool      `json:"suspended"`
	// ForeignNamespace: the namespace exists and slipway did not create it (see plan.Plan).
	ForeignNamespace bool          `json:"foreignNamespace"`
	Destroy          bool          `json:"destroy"`
	Notes            []string      `json:"notes"`
	Changes          bool          `json:"changes"`
	Counts           planCounts    `json:"counts"`
	Images           []plan.Image  `json:"images"`
	GroupChanges     []plan.Change `json:"groupChanges"`
	GroupSteps       []plan.Step   `json:"groupSteps"`
	Nodes            []nodeDoc     `json:"nodes"`
	Drift            []plan.Drift  `json:"drift"`
	lanes            []member
}

// MarshalJSON writes the document with the lanes' keys after its own.
func (d planDoc) MarshalJSON() ([]byte, error) {
	type own planDoc // without this method
	return withMembers(own(d), d.lanes)
}

// nodeDoc is one node of `plan -o json`: its changes and the steps apply runs for it.
type nodeDoc struct {
	plan.NodePlan
	Steps []plan.Step `json:"steps"`
}

// PlanJSON writes p as one JSON document.
func PlanJSON(w io.Writer, p *plan.Plan) error {
	t := p.Totals()
	doc := planDoc{
		Version: JSONVersion, Group: p.Group, Namespace: p.Namespace, Created: p.Created,
		StateSerial: p.StateSerial, StateLineage: p.StateLineage, Suspended: p.Suspended,
		ForeignNamespace: p.ForeignNamespace, Destroy: p.Destroy, Notes: nonNil(p.Notes), Changes: !t.Zero(),
		Counts: t.All(), Images: nonNil(p.Images), GroupChanges: []plan.Change{}, GroupSteps: nonNil(nodeSteps(p, "")),
		Nodes: []nodeDoc{}, Drift: nonNil(p.Drift),
	}
	for _, l := range p.Lanes() {
		if jl, ok := l.(plan.JSONLane); ok {
			key, value := jl.JSON()
			doc.lanes = append(doc.lanes, member{key, value})
		}
	}
	for _, np := range p.Nodes {
		if np.Node == "" {
			doc.GroupChanges = append(doc.GroupChanges, np.Changes...)
			continue
		}
		doc.Nodes = append(doc.Nodes, nodeDoc{NodePlan: np, Steps: nonNil(nodeSteps(p, np.Node))})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// nonNil makes an empty list [] in JSON rather than null, so readers need not check both.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// member is a key of a JSON object and its value, for the keys a lane gives (ui does not name
// them in a type of its own).
type member struct {
	key   string
	value any
}

// withMembers is the JSON object of v (a struct) with ms after its own keys, in order.
func withMembers(v any, ms []member) ([]byte, error) {
	own, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	objs := [][]byte{own}
	for _, m := range ms {
		b, err := json.Marshal(map[string]any{m.key: m.value})
		if err != nil {
			return nil, fmt.Errorf("plan -o json: %s: %w", m.key, err)
		}
		objs = append(objs, b)
	}
	return plan.JoinObjects(objs...)
}
