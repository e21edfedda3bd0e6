package dns

import (
	"fmt"
	"slices"
	"strings"
)

// Action is what one set needs on the server.
type Action string

const (
	None     Action = ""         // the server holds what is wanted, or nothing of ours to retire
	Create   Action = "create"   // nothing at the name yet: the records and the owner TXT
	Update   Action = "update"   // ours, with other values, TTL or node
	Delete   Action = "delete"   // ours, no longer wanted: retired
	Conflict Action = "conflict" // records at the name that are not ours: never touched
	// Adopt: the set is owned under an earlier key of the deployment (an owner Decide was
	// told it adopts): the owner TXT is rewritten to the deployment's, and the records are
	// left as they are when they are the wanted ones (else replaced, as Update does).
	Adopt Action = "adopt"
)

// Seen is what the server holds for one set: the owner TXT's texts, and the records at the
// set's name of its kind's types (for KindSPF only the SPF records, IsSPF).
type Seen struct {
	Owner   []string `json:"owner,omitempty"`
	Records []Record `json:"records,omitempty"`
}

// ConflictError is a name held by records slipway does not own (SPEC §7): apply refuses its
// node, and slipway never overwrites them.
type ConflictError struct {
	Name    string   // the published name
	Kind    Kind     // what slipway would publish there
	Records []Record // what the name holds
	// OwnerText is the owner TXT found, "" when there is none (records made by someone else
	// without one).
	OwnerText string
	// Changed: the server's records moved between the read and the UPDATE (a prerequisite
	// failed), so the name is left as it is until the next plan reads it again.
	Changed bool
	// OtherSPF: the zone holds another party's SPF record beside slipway's (spf.go).
	OtherSPF bool
}

func (e *ConflictError) Error() string {
	if e.Changed {
		return fmt.Sprintf("dns name %s: refused: its records changed since they were read (an UPDATE prerequisite failed); plan again", e.Name)
	}
	held := "no records"
	if len(e.Records) > 0 {
		parts := make([]string, len(e.Records))
		for i, r := range e.Records {
			parts[i] = r.String()
		}
		held = strings.Join(parts, ", ")
	}
	if e.OtherSPF {
		return fmt.Sprintf("dns name %s (spf): conflict: it holds %s: another party's SPF record is beside slipway's (a zone has one SPF record, RFC 7208 3.2): slipway leaves theirs alone", e.Name, held)
	}
	whose := "without an owner TXT"
	if e.OwnerText != "" {
		whose = fmt.Sprintf("owned by %q", e.OwnerText)
	}
	return fmt.Sprintf("dns name %s: conflict: it holds %s %s, not slipway's for this group: slipway leaves it alone", e.Name, held, whose)
}

// Decide says what set needs, given what the server holds (seen) and owner (Owner). want
// nil means the set is no longer wanted: it is retired when it is ours. A conflict comes
// with its ConflictError. adopts are owners the deployment had under an earlier release's
// key (issue 46): a set one of them owns is the deployment's, Adopt when wanted (its owner
// TXT is rewritten), Delete when not; any other owner stays a conflict.
func Decide(want *Set, name string, kind Kind, seen Seen, owner string, adopts ...string) (Action, *ConflictError) {
	ours, found := owned(seen.Owner, owner)
	adopted := false
	for _, from := range adopts {
		if o, _ := owned(seen.Owner, from); !ours && from != "" && o {
			ours, adopted = true, true
		}
	}
	conflict := func() (Action, *ConflictError) {
		ce := &ConflictError{Name: name, Kind: kind, Records: seen.Records}
		if len(seen.Owner) > 0 {
			ce.OwnerText = strings.Join(seen.Owner, " ")
		}
		return Conflict, ce
	}
	records := seen.Records
	if ours && kind == KindSPF {
		mine, others, ok := splitSPF(seen)
		if !ok || (want != nil && len(others) > 0) {
			// Another party's SPF: publishing beside it breaks the zone's SPF, and a
			// retire takes only slipway's (it cannot when which one is not known).
			_, ce := conflict()
			ce.OtherSPF = true
			return Conflict, ce
		}
		records = mine
	}
	if want == nil {
		if ours {
			return Delete, nil
		}
		return None, nil // gone already, or someone else's now: nothing of ours to retire
	}
	switch {
	case !found && len(seen.Records) == 0:
		return Create, nil
	case !ours:
		return conflict()
	}
	switch {
	case adopted:
		return Adopt, nil
	case seen.Owner[0] != want.OwnerTextOf(owner) || !slices.Equal(records, want.Records()):
		return Update, nil
	}
	return None, nil
}

// AdoptedOwner is the owner that the owner TXT of seen names (an Adopt: the earlier key's).
func AdoptedOwner(seen Seen) string {
	if len(seen.Owner) != 1 {
		return ""
	}
	o, _, _ := parseOwner(seen.Owner[0])
	return o
}

// Holds reports whether seen holds exactly s's records (for the SPF, slipway's one).
func (s Set) Holds(seen Seen) bool {
	records := seen.Records
	if s.Kind == KindSPF {
		mine, _, ok := splitSPF(seen)
		if !ok {
			return false
		}
		records = mine
	}
	return slices.Equal(records, s.Records())
}

// owned reports whether texts (the owner TXT's) say owner owns the set, and whether there is
// an owner TXT at all. Ours is exactly one text of slipway's naming owner.
func owned(texts []string, owner string) (ours, found bool) {
	if len(texts) == 0 {
		return false, false
	}
	if len(texts) != 1 {
		return false, true
	}
	o, _, ok := parseOwner(texts[0])
	return ok && o == owner, true
}
