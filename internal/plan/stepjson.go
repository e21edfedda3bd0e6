package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"time"
)

// stepPayloads are the payloads a step's JSON carries, by the step's kind, and how each is
// read back: a saved plan's steps and `plan -o json` show them. Each is a struct whose fields
// are members of the step's object, written after rollback, where they were when they were
// fields of Step: the JSON stays as it was. A kind not named here keeps its payload out of
// JSON: a spire or central step's, which the plan saves in its own fields (Plan.Spire,
// Plan.Central) and BuildSteps puts in the steps again.
var stepPayloads = map[StepKind]func(step []byte) (StepPayload, error){
	StepPublishDNS:      payloadOf[DNSPublish],
	StepRetireDNS:       payloadOf[DNSRetire],
	StepApplyDeployment: payloadOf[MigrationCopy],
	StepAwaitRollout:    payloadOf[MigrationRestore],
	StepRemoveCopy:      payloadOf[CopyRemoval],
}

// payloadOf reads a payload of type P from a step's JSON object; nil when the object holds
// none of P's members (an apply-deployment without a migration).
func payloadOf[P StepPayload](step []byte) (StepPayload, error) {
	var p P
	if err := json.Unmarshal(step, &p); err != nil {
		return nil, err
	}
	if reflect.ValueOf(p).IsZero() {
		return nil, nil
	}
	return p, nil
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
	parts := []any{step(s)}
	if _, ok := stepPayloads[s.Kind]; ok && s.Payload != nil {
		parts = append(parts, s.Payload)
	}
	parts = append(parts, tail)
	out := []byte{'{'}
	for _, part := range parts {
		b, err := json.Marshal(part)
		if err != nil {
			return nil, fmt.Errorf("step %s: %w", s.Kind, err)
		}
		members, ok := bytes.CutPrefix(b, []byte{'{'})
		if !ok {
			return nil, fmt.Errorf("step %s: its payload %T is no JSON object", s.Kind, part)
		}
		members = members[:len(members)-1] // the closing brace
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
	if read := stepPayloads[s.Kind]; read != nil {
		p, err := read(b)
		if err != nil {
			return fmt.Errorf("step %s: %w", s.Kind, err)
		}
		s.Payload = p
	}
	return nil
}
