package plan

import "fmt"

// CentralChanges are the central lane's changes as a step's payload and as the plan's part.
type CentralChanges []CentralChange

// StepText is how plan prints a central step.
func (cs CentralChanges) StepText() string { return centralStepText(cs) }

// Sections are the changes: names and what changes, never a value.
func (cs CentralChanges) Sections() []Section {
	if len(cs) == 0 {
		return nil
	}
	s := Section{Heading: "central services"}
	for _, c := range cs {
		s.Rows = append(s.Rows, Row{Action: c.Action, Text: c.String()})
	}
	return []Section{s}
}

// Counts counts the changes.
func (cs CentralChanges) Counts() []Count {
	return []Count{{Key: "central", N: len(cs), Text: fmt.Sprintf("%d central service change(s)", len(cs)),
		What: "central service changes"}}
}

// Applied counts the changes.
func (cs CentralChanges) Applied() string {
	if len(cs) == 0 {
		return ""
	}
	return fmt.Sprintf("central services: %d change(s)", len(cs))
}

// JSON lists the changes under "central" (issue 44).
func (cs CentralChanges) JSON() (key string, value any) {
	if cs == nil {
		return "central", []CentralChange{}
	}
	return "central", cs
}

var (
	_ StepPayload = CentralChanges(nil)
	_ JSONLane    = CentralChanges(nil)
)
