package plan

import (
	"fmt"

	"slipway.dev/slipway/internal/quote"
)

// dnsPart is the publish lane's part of a plan (SPEC §7): each node's DNS record changes,
// in its section, and their counts. Its changes are saved in the nodes' Records and listed
// there by `plan -o json`.
type dnsPart []NodePlan

// Sections are none: the records stand in their nodes' sections.
func (dnsPart) Sections() []Section { return nil }

// NodeRows are np's record changes. A record's names and data come from the DNS server and
// the group file: quoted.
func (dnsPart) NodeRows(np NodePlan) []Row {
	var rows []Row
	for _, r := range np.Records {
		rows = append(rows, Row{Action: r.Action, Text: quote.Line(r.String())})
	}
	return rows
}

// Counts are the record sets apply publishes, changes or retires, and the names held by
// records slipway does not own (apply refuses their nodes).
func (d dnsPart) Counts() []Count {
	n := d.byAction()
	changes := d.changes(n)
	return []Count{
		{Key: "records", N: changes, Text: fmt.Sprintf("%d DNS record set(s) to publish, change or retire", changes),
			What: "DNS record sets to publish, change or retire"},
		{Key: "recordConflicts", N: n[Conflict], Text: fmt.Sprintf("%d DNS conflict(s): apply refuses their nodes", n[Conflict]), Tone: ToneRefused,
			What: "DNS names held by records slipway does not own"},
	}
}

// Applied says what apply did to the names: a run that only moved names would otherwise read
// as one that did nothing.
func (d dnsPart) Applied() string {
	n := d.byAction()
	if d.changes(n) == 0 {
		return ""
	}
	return fmt.Sprintf("DNS: %d record set(s) published, %d changed, %d retired", n[Create], n[Update], n[Delete])
}

// byAction counts the record changes by action.
func (d dnsPart) byAction() map[Action]int {
	n := map[Action]int{}
	for _, np := range d {
		for _, r := range np.Records {
			n[r.Action]++
		}
	}
	return n
}

// changes are the record changes apply makes: all but the conflicts, which it refuses.
func (d dnsPart) changes(byAction map[Action]int) int {
	sum := 0
	for a, k := range byAction {
		if a != Conflict {
			sum += k
		}
	}
	return sum
}

var _ NodeLane = dnsPart(nil)
