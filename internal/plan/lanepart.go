package plan

// A lane's data and text in the pure core (issue 45): a lane's step carries its payload (a
// StepPayload) instead of a field per lane in Step, and the plan's text of a lane is its
// LanePart (its sections, its counts, and a NodeLane's rows in the nodes' sections), not a
// branch per lane in ui. The types and their text live in the lane's files of this package
// (spire.go and spirepart.go, central.go and centralpart.go, move.go and movepart.go,
// records.go and dnspart.go, migrate.go and statepart.go). What stays one per lane: the
// plan's field that saves its changes (Plan.Spire, Plan.Central, Plan.Move, a node's
// Records, Migration and RemoveCopy: a saved plan's format), its line in Plan.Lanes and its
// place in BuildSteps, the one place that orders steps.

// StepPayload is a lane's data in one of its steps: what the lane's executor runs (it takes
// its own type back with a type assertion) and how plan prints the step. The payloads of the
// kinds stepjson.go names (a step's DNS records, migration, kept state version) are members
// of the step's JSON, where they were as fields of Step; the others never are: apply builds
// its steps again from the plan's own fields (BuildSteps).
type StepPayload interface {
	// StepText says what the step does, as `plan` prints it (Step.String): all of a step of
	// the lane's own; on a step whose line is another's (a migration on the rollout's steps)
	// or says more (the Job and limit of a remove-copy), the lane's share, which Step.String
	// puts in its place.
	StepText() string
}

// LanePart is a lane's share of a plan as `plan` shows and sums it up.
type LanePart interface {
	// Sections are the lane's parts of the plan's text, after the nodes, in order; none when
	// the lane changes nothing.
	Sections() []Section
	// Counts are the lane's totals, in order: each is a key of `plan -o json`'s counts and,
	// when not zero, a clause of plan's closing line ("2 SPIRE change(s)").
	Counts() []Count
	// Applied is the lane's clause in apply's closing line ("SPIRE: 2 change(s)"); "" when it
	// changes nothing.
	Applied() string
}

// NodeLane is a lane whose changes belong to nodes (a node's DNS records, its state
// migration): its rows stand in the node's section of the plan, after the node's objects.
type NodeLane interface {
	LanePart
	// NodeRows are the lane's rows of np; none when it changes nothing of np.
	NodeRows(np NodePlan) []Row
}

// JSONLane is a lane whose changes `plan -o json` lists beside the nodes, under its own key.
type JSONLane interface {
	LanePart
	// JSON is the key and the value (never null: [] when the lane changes nothing).
	JSON() (key string, value any)
}

// Section is one heading of the plan's text and the changes under it. Its text is safe for
// a terminal as it is: the lane quotes what came from outside slipway.
type Section struct {
	Heading string
	Rows    []Row
}

// Row is one change of a Section or of a node's section: its action (the mark and column ui
// gives it) and what it says; or, with Change, an object change, which ui writes as it writes
// a node's (its key, its loss of data marked, its diff).
type Row struct {
	Action Action
	// Verb is the word in the action's column when it is not the action's own ("migrate"
	// under the mark of an update).
	Verb string
	Text string
	// Detail are lines under the row, indented as a change's reason is.
	Detail []string
	Change *Change
}

// Count is one of a lane's totals.
type Count struct {
	Key  string // its key in `plan -o json`'s counts
	N    int
	Text string // its clause in plan's closing line, shown when N is not zero
	Tone Tone
	// What it counts, in words without the number: a saved plan refused because the total
	// moved says "DNS record sets to publish, change or retire: 1 planned, 2 now".
	What string
	// Unlisted: a total that counts (HasChanges, a saved plan's check) that plan neither
	// prints nor lists in `plan -o json` (no Text, no key there): the namespace move, whose
	// deletions count among the plan's own and whose section says the rest.
	Unlisted bool
}

// Tone is how a clause of the closing line stands out on a terminal.
type Tone int

const (
	TonePlain   Tone = iota
	ToneCaution      // to read before applying: yellow, as an update's mark (a state migration)
	ToneRefused      // apply refuses it: red, as a conflict's mark
)

// Lanes are the lanes' parts of p, in the order plan shows them and sums them up (and
// `plan -o json` lists their counts and keys: docs/json.md).
func (p *Plan) Lanes() []LanePart {
	return []LanePart{dnsPart(p.Nodes), statePart(p.Nodes), movePart{p.Move, p.Namespace},
		SpireChanges(p.Spire), CentralChanges(p.Central)}
}

// NodeRows are the rows the lanes add to np's section, in the order of Lanes.
func (p *Plan) NodeRows(np NodePlan) []Row {
	var rows []Row
	for _, l := range p.Lanes() {
		if nl, ok := l.(NodeLane); ok {
			rows = append(rows, nl.NodeRows(np)...)
		}
	}
	return rows
}
