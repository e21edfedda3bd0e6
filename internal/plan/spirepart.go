package plan

import (
	"fmt"

	"slipway.dev/slipway/internal/quote"
)

// SpireChanges are the SPIRE lane's changes as a step's payload and as the plan's part.
type SpireChanges []SpireChange

// StepText is how plan prints a spire step.
func (cs SpireChanges) StepText() string { return spireStepText(cs) }

// Sections are the changes under each cluster's name on the server, in the order they come:
// a move's old cluster (its parts retired) before the new. Changes of no known cluster
// (rights found again alone) come under "spire". The names come from the server: quoted.
func (cs SpireChanges) Sections() []Section {
	var out []Section
	for i := 0; i < len(cs); {
		j := i
		for j < len(cs) && cs[j].Cluster == cs[i].Cluster {
			j++
		}
		s := Section{Heading: "spire"}
		if cs[i].Cluster != "" {
			s.Heading = "spire (cluster " + quote.Line(cs[i].Cluster) + ")"
		}
		for _, c := range cs[i:j] {
			s.Rows = append(s.Rows, Row{Action: c.Action, Text: quote.Line(c.String())})
		}
		out = append(out, s)
		i = j
	}
	return out
}

// Counts counts the changes.
func (cs SpireChanges) Counts() []Count {
	return []Count{{Key: "spire", N: len(cs), Text: fmt.Sprintf("%d SPIRE change(s)", len(cs)),
		What: "SPIRE changes"}}
}

// Applied counts the changes.
func (cs SpireChanges) Applied() string {
	if len(cs) == 0 {
		return ""
	}
	return fmt.Sprintf("SPIRE: %d change(s)", len(cs))
}

// JSON lists the changes under "spire" (FR-015 to FR-017).
func (cs SpireChanges) JSON() (key string, value any) {
	if cs == nil {
		return "spire", []SpireChange{}
	}
	return "spire", cs
}

var (
	_ StepPayload = SpireChanges(nil)
	_ JSONLane    = SpireChanges(nil)
)
