package plan

import (
	"fmt"

	"slipway.dev/slipway/internal/quote"
)

// statePart is the migrate lane's part of a plan (SPEC §6a): each node's state migration and
// removal of a copy left by one, in its section, and their counts. Its changes are saved in
// the nodes' Migration and RemoveCopy and listed there by `plan -o json`.
type statePart []NodePlan

// Sections are none: a migration stands in its node's section.
func (statePart) Sections() []Section { return nil }

// NodeRows say what np's state migration, or the removal of a copy left by one, does to its
// volume.
func (statePart) NodeRows(np NodePlan) []Row {
	var rows []Row
	if m := np.Migration; m != nil {
		rows = append(rows, Row{Action: Update, Verb: "migrate",
			Text: fmt.Sprintf("state version %s -> %s", versionLine(m.From), versionLine(m.To)),
			Detail: []string{
				"the new pod copies /var/lib to /var/lib/.slipway-state/copy on its volume before the node starts; if the rollout fails,",
				fmt.Sprintf("the template set back puts the copy back first and the state keeps version %s; if it succeeds, the copy is removed", versionLine(m.From)),
			}})
	}
	if c := np.RemoveCopy; c != nil {
		rows = append(rows, Row{Action: Delete, Verb: "remove",
			Text: fmt.Sprintf("copy of /var/lib taken at state version %s (its migration to %s ran ready)", versionLine(c.From), versionLine(c.To))})
	}
	return rows
}

// Counts are the state migrations, to read before applying, and the copies apply removes.
func (s statePart) Counts() []Count {
	var migrate, remove int
	for _, np := range s {
		if np.Migration != nil {
			migrate++
		}
		if np.RemoveCopy != nil {
			remove++
		}
	}
	return []Count{
		{Key: "migrate", N: migrate, Text: fmt.Sprintf("%d state migration(s)", migrate), Tone: ToneCaution,
			What: "state migrations"},
		{Key: "removeCopy", N: remove, Text: fmt.Sprintf("%d cop(ies) of /var/lib to remove", remove),
			What: "copies of /var/lib to remove"},
	}
}

// Applied is none: the rollouts and the Jobs that remove copies are the run's own lines.
func (statePart) Applied() string { return "" }

// versionLine is a state version as plan prints it: "none" for a node that had none, and
// quoted (the state's: a backend anyone with its rights may have written).
func versionLine(v string) string {
	if v == "" {
		return "none"
	}
	return quote.Line(v)
}

var _ NodeLane = statePart(nil)
