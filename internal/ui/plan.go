package ui

import (
	"fmt"
	"io"
	"strings"

	"slipway.dev/slipway/internal/plan"
)

// JSONVersion is the version of slipway's JSON documents: `plan -o json`, `status -o json` and
// the event lines of `-o json`. It changes when a field is renamed, moved or removed.
const JSONVersion = 1

// PlanOptions say how Plan writes.
type PlanOptions struct {
	// Color marks additions green, in-place changes yellow and removals red (a terminal).
	Color bool
}

// Applied writes the line that ends a successful apply of p.
func Applied(w io.Writer, p *plan.Plan) error {
	if !p.HasChanges() {
		_, err := fmt.Fprintln(w, "No changes.")
		return err
	}
	c := p.Counts()
	line := fmt.Sprintf("Apply complete: %d image(s) pushed, %d created, %d updated, %d replaced, %d deleted",
		c.Push, c.Create, c.Update, c.Replace, c.Delete)
	for _, l := range p.Lanes() {
		if applied := l.Applied(); applied != "" {
			line += "; " + applied
		}
	}
	_, err := fmt.Fprintln(w, line+".")
	return err
}

// Plan writes p as plain text (no escape codes); see PlanWith.
func Plan(w io.Writer, p *plan.Plan) { PlanWith(w, p, PlanOptions{}) }

// PlanNotes writes the plan's notes, one "note: …" line each: what the operator should know
// that changes nothing. The CLI writes them to stderr, so that a plan's stdout stays its
// result ("No changes." alone when there are none).
func PlanNotes(w io.Writer, p *plan.Plan) {
	for _, n := range p.Notes {
		fmt.Fprintf(w, "note: %s\n", q(n))
	}
}

// PlanWith writes p as text: per node its images and changes, destructive ones marked, the
// drift, and a closing summary; "No changes." when apply would do nothing.
func PlanWith(w io.Writer, p *plan.Plan, o PlanOptions) {
	pal := palette{on: o.Color}
	c := p.Counts()
	if p.Suspended {
		fmt.Fprintf(w, "Group %s is suspended: its Deployments stay at 0 replicas until `slipway resume`.\n\n", q(p.Group))
	}
	for _, d := range p.Drift {
		if d.Running == d.State {
			fmt.Fprintf(w, "%s node %s: rollout pending: %s\n", pal.yellow("!"), q(d.Node), q(d.Note))
			continue
		}
		fmt.Fprintf(w, "%s node %s drifted: runs %s, the state wants %s\n    %s\n", pal.yellow("!"), q(d.Node), q(d.Running), q(d.State), q(d.Note))
	}
	if len(p.Drift) > 0 {
		fmt.Fprintln(w)
	}
	if p.ForeignNamespace {
		fmt.Fprintf(w, "%s namespace %s was not created by slipway: apply deploys into it without taking it over, and destroy removes only the group's own objects from it.\n\n", pal.yellow("!"), q(p.Namespace))
	}
	if !p.HasChanges() {
		fmt.Fprintln(w, "No changes.")
		return
	}
	if p.Destroy {
		fmt.Fprintf(w, "Destroy plan for group %s in namespace %s (plan -destroy: nothing is changed):\n", q(p.Group), q(p.Namespace))
	} else {
		fmt.Fprintf(w, "Plan for group %s in namespace %s:\n", q(p.Group), q(p.Namespace))
	}
	for _, np := range p.Nodes {
		writeNodePlan(w, pal, p, np)
	}
	writeLanes(w, pal, p)
	writeCounts(w, pal, p, c)
}

// writeNodePlan writes what the plan does to node np (the group's own objects for ""): its
// image pushes, changes, the lanes' rows (its DNS records, its state migration) and steps;
// nothing when it has none.
func writeNodePlan(w io.Writer, pal palette, p *plan.Plan, np plan.NodePlan) {
	var imgs []plan.Image
	for _, im := range p.Images {
		if im.Node == np.Node && np.Node != "" && im.Push {
			imgs = append(imgs, im)
		}
	}
	rows := p.NodeRows(np)
	if len(np.Changes) == 0 && len(imgs) == 0 && len(rows) == 0 {
		return
	}
	title := "node " + q(np.Node)
	if np.Node == "" {
		title = "group"
	}
	if np.Removed {
		title += " (left the group: everything of it is deleted)"
	}
	fmt.Fprintf(w, "\n  %s:\n", title)
	for _, im := range imgs {
		fmt.Fprintln(w, changeLine(pal, "^", "push", "image "+q(im.Tag)))
	}
	for _, ch := range np.Changes {
		writeChange(w, pal, ch)
	}
	writeRows(w, pal, rows)
	writeSteps(w, pal, nodeSteps(p, np.Node))
}

// writeCounts writes the plan's last line: what it pushes, creates, updates, replaces and
// deletes, then each other count that is not zero and each lane's clause (but an unlisted
// total's: the namespace move's).
func writeCounts(w io.Writer, pal palette, p *plan.Plan, c plan.Counts) {
	fmt.Fprintf(w, "\n%s %d image(s) to push, %d to create, %d to update, %d to replace, %d to delete", pal.bold("Plan:"), c.Push, c.Create, c.Update, c.Replace, c.Delete)
	for _, x := range []struct {
		n      int
		format string
	}{
		{c.Conflict, "%d conflict(s): apply refuses"},
		{c.Terminating, "%d being deleted"},
	} {
		if x.n > 0 {
			fmt.Fprintf(w, "; %s", pal.red(fmt.Sprintf(x.format, x.n)))
		}
	}
	for _, l := range p.Lanes() {
		for _, n := range l.Counts() {
			if n.N > 0 && !n.Unlisted {
				fmt.Fprintf(w, "; %s", pal.tone(n.Tone, n.Text))
			}
		}
	}
	fmt.Fprintln(w, ".")
}

// writeLanes writes each lane's sections (plan.LanePart) after the nodes: its heading, then
// its changes in the columns of the nodes'.
func writeLanes(w io.Writer, pal palette, p *plan.Plan) {
	for _, l := range p.Lanes() {
		for _, s := range l.Sections() {
			fmt.Fprintf(w, "\n  %s:\n", s.Heading)
			writeRows(w, pal, s.Rows)
		}
	}
}

// writeRows writes a lane's rows in the columns of a node's changes: their text is the
// lane's, safe as it is.
func writeRows(w io.Writer, pal palette, rows []plan.Row) {
	for _, r := range rows {
		if r.Change != nil {
			writeChange(w, pal, *r.Change)
			continue
		}
		verb := string(r.Action)
		if r.Verb != "" {
			verb = r.Verb
		}
		fmt.Fprintln(w, changeLine(pal, marks[r.Action], verb, r.Text))
		for _, d := range r.Detail {
			fmt.Fprintf(w, "        %s\n", d)
		}
	}
}

var marks = map[plan.Action]string{plan.Create: "+", plan.Update: "~", plan.Replace: "-/+", plan.Delete: "-",
	plan.Conflict: "!", plan.Terminating: "x"}

// changeLine is "    MARK ACTION   WHAT" with the mark and action in fixed columns; colour is
// added after padding so that it never shifts a column.
func changeLine(pal palette, mark, action, what string) string {
	return "    " + pal.mark(mark) + strings.Repeat(" ", max(0, 3-len(mark))) + " " + fmt.Sprintf("%-8s", action) + " " + what
}

func writeChange(w io.Writer, pal palette, ch plan.Change) {
	line := changeLine(pal, marks[ch.Action], string(ch.Action), q(ch.Key.String()))
	if ch.Destructive {
		line += "   " + pal.red("# DESTROYS DATA")
	}
	fmt.Fprintln(w, line)
	if ch.Reason != "" && (ch.Destructive || len(ch.Diff) == 0) {
		fmt.Fprintf(w, "        %s\n", q(ch.Reason))
	}
	if ch.Action != plan.Update && ch.Action != plan.Replace {
		return
	}
	for i, d := range ch.Diff {
		if i == 20 {
			fmt.Fprintf(w, "        … %d more fields\n", len(ch.Diff)-20)
			break
		}
		switch {
		case d.Old == "":
			fmt.Fprintf(w, "        %s %s: %s\n", pal.green("+"), q(d.Path), q(d.New))
		case d.New == "":
			fmt.Fprintf(w, "        %s %s: %s\n", pal.red("-"), q(d.Path), q(d.Old))
		default:
			fmt.Fprintf(w, "        %s %s: %s -> %s\n", pal.yellow("~"), q(d.Path), q(d.Old), q(d.New))
		}
	}
}

// nodeSteps are the steps of node ("" the group's own, before any node).
func nodeSteps(p *plan.Plan, node string) []plan.Step {
	if node == "" {
		if p.Steps == nil {
			return nil
		}
		return p.Steps.Before
	}
	return p.Steps.Node(node)
}

// writeSteps lists what apply does, in order, under the changes it makes them from.
func writeSteps(w io.Writer, pal palette, steps []plan.Step) {
	if len(steps) == 0 {
		return
	}
	fmt.Fprintf(w, "    %s\n", pal.bold("steps:"))
	for i, st := range steps {
		fmt.Fprintf(w, "      %d. %s\n", i+1, q(st.String()))
	}
}
