package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"time"
)

// stepPayloads are the payloads a step's JSON carries, by the step's kind: the type each
// kind's payload has and is read back as. A saved plan's steps and `plan -o json` show them.
// Each is a struct whose fields are members of the step's object, written after rollback,
// where they were when they were fields of Step: the JSON stays as it was. A kind not named
// here keeps its payload out of JSON: a spire or central step's, which the plan saves in its
// own fields (Plan.Spire, Plan.Central) and BuildSteps puts in the steps again.
var stepPayloads = map[StepKind]reflect.Type{
	StepPublishDNS:      reflect.TypeFor[DNSPublish](),
	StepRetireDNS:       reflect.TypeFor[DNSRetire](),
	StepApplyDeployment: reflect.TypeFor[MigrationCopy](),
	StepAwaitRollout:    reflect.TypeFor[MigrationRestore](),
	StepRemoveCopy:      reflect.TypeFor[CopyRemoval](),
}

// jsonPayload is the payload s's JSON carries: nil when its kind's carries none, an error
// when s's payload is not of the type its kind's is read back as.
func jsonPayload(s Step) (StepPayload, error) {
	t, ok := stepPayloads[s.Kind]
	if !ok || s.Payload == nil {
		return nil, nil
	}
	if got := reflect.TypeOf(s.Payload); got != t {
		return nil, fmt.Errorf("step %s: payload %s, want %s", s.Kind, got, t)
	}
	return s.Payload, nil
}

// readPayload reads the payload of a step of kind from the step's JSON object; nil when its
// kind's JSON carries none, or the object holds none of its members (an apply-deployment
// without a migration).
func readPayload(kind StepKind, step []byte) (StepPayload, error) {
	t, ok := stepPayloads[kind]
	if !ok {
		return nil, nil
	}
	p := reflect.New(t)
	if err := json.Unmarshal(step, p.Interface()); err != nil {
		return nil, err
	}
	if p.Elem().IsZero() {
		return nil, nil
	}
	return p.Elem().Interface().(StepPayload), nil
}

// stepTail is the end of a Step's JSON: the limit as text ("5m0s"), replicas only where they
// count.
type stepTail struct {
	Replicas *int32 `json:"replicas,omitempty"`
	Limit    string `json:"limit,omitempty"`
}

// stepJSON is a Step as JSON, but for its payload.
type stepJSON struct {
	step
	stepTail
}

type step Step // without its methods: no recursion into MarshalJSON

// MarshalJSON writes the step's fields, then its payload's members when its kind is one of
// stepPayloads, then its replicas and limit.
func (s Step) MarshalJSON() ([]byte, error) {
	var tail stepTail
	if s.Kind == StepAwaitRollout || s.Kind == StepAwaitReady || s.Kind == StepStartRole {
		tail.Replicas = &s.Replicas
	}
	if s.Limit > 0 {
		tail.Limit = s.Limit.String()
	}
	p, err := jsonPayload(s)
	if err != nil {
		return nil, err
	}
	parts := []any{step(s)}
	if p != nil {
		parts = append(parts, p)
	}
	objs := make([][]byte, 0, len(parts)+1)
	for _, part := range append(parts, tail) {
		b, err := json.Marshal(part)
		if err != nil {
			return nil, fmt.Errorf("step %s: %w", s.Kind, err)
		}
		objs = append(objs, b)
	}
	out, err := JoinObjects(objs...)
	if err != nil {
		return nil, fmt.Errorf("step %s: %w", s.Kind, err)
	}
	return out, nil
}

// JoinObjects is one JSON object of the members of objs, each a JSON object, in their order:
// how a step's JSON takes in its payload's members, and `plan -o json` the keys its lanes
// give. An empty object adds nothing.
func JoinObjects(objs ...[]byte) ([]byte, error) {
	out := []byte{'{'}
	for _, o := range objs {
		o = bytes.TrimSpace(o)
		if len(o) < 2 || o[0] != '{' || o[len(o)-1] != '}' {
			return nil, fmt.Errorf("%.40q is no JSON object", o)
		}
		members := bytes.TrimSpace(o[1 : len(o)-1])
		if len(members) == 0 {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, members...)
	}
	return append(out, '}'), nil
}

// UnmarshalJSON reads a step written by MarshalJSON, its payload by its kind.
func (s *Step) UnmarshalJSON(b []byte) error {
	var j stepJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*s = Step(j.step)
	if j.stepTail.Replicas != nil {
		s.Replicas = *j.stepTail.Replicas
	}
	if j.stepTail.Limit != "" {
		d, err := time.ParseDuration(j.stepTail.Limit)
		if err != nil {
			return fmt.Errorf("step %s: limit: %w", j.Kind, err)
		}
		s.Limit = d
	}
	p, err := readPayload(s.Kind, b)
	if err != nil {
		return fmt.Errorf("step %s: %w", s.Kind, err)
	}
	s.Payload = p
	return nil
}
