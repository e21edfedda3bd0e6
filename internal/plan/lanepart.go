package plan

// A lane's data and text in the pure core (issue 45): a lane's step carries its payload (a
// StepPayload) instead of a field per lane in Step, and the plan's text of a lane is its
// LanePart's sections, not a branch per lane in ui. The types and their text live in the
// lane's file of this package (spire.go and spirepart.go, central.go and centralpart.go,
// move.go and movepart.go). What stays one per lane: the plan's field that saves its changes
// (Plan.Spire, Plan.Central, Plan.Move: a saved plan's format), its line in Plan.Lanes and its place in BuildSteps,
// the one place that orders steps.

// StepPayload is a lane's data in one of its steps: what the lane's executor runs (it takes
// its own type back with a type assertion) and how plan prints the step. Never in JSON: apply
// builds its steps again from the plan's own fields (BuildSteps).
type StepPayload interface {
	// StepText says what the step does, as `plan` prints it (Step.String).
	StepText() string
}

// LanePart is a lane's share of a plan as `plan` shows and sums it up.
type LanePart interface {
	// Sections are the lane's parts of the plan's text, after the nodes, in order; none when
	// the lane changes nothing.
	Sections() []Section
	// Summary is the lane's clause in plan's closing line ("2 SPIRE change(s)") and in
	// apply's ("SPIRE: 2 change(s)"); "" when it changes nothing.
	Summary() (planned, applied string)
}

// Section is one heading of the plan's text and the changes under it. Its text is safe for
// a terminal as it is: the lane quotes what came from outside slipway.
type Section struct {
	Heading string
	Rows    []Row
}

// Row is one change of a Section: its action (the mark and column ui gives it) and what it
// says; or, with Change, an object change, which ui writes as it writes a node's (its key,
// its loss of data marked, its diff).
type Row struct {
	Action Action
	Text   string
	Change *Change
}

// Lanes are the lanes' parts of p, in the order plan shows them.
func (p *Plan) Lanes() []LanePart {
	return []LanePart{movePart{p.Move, p.Namespace}, SpireChanges(p.Spire), CentralChanges(p.Central)}
}
