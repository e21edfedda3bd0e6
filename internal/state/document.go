// Package state records what slipway applied to a group (SPEC §8) and keeps two runs from
// changing one group at once. A group's state is one versioned JSON document with a lineage
// (made once) and a serial (raised by every write); a Store reads and writes it with a
// compare-and-swap on both, and a Locker holds the group's lock, which always says who holds it.
//
// Backends, chosen by URL in Open: file://PATH (atomic rename, a lock file created
// exclusively), kubernetes://NAMESPACE (a gzip Secret and a renewed Lease, through KubeAccess)
// and http(s):// (the Terraform/OpenTofu HTTP backend protocol). The package assumes callers
// write only while they hold the lock; the serial check is what catches one that does not. It
// never prints: notices (a lock taken over, a lease lost) go to the Notify option. It never
// stores a credential: the document has no field for one and HTTP passwords stay in the request.
package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"slipway.dev/slipway/internal/event"
)

// CurrentVersion is the document version this binary writes and the newest it reads.
const CurrentVersion = 1

// Document is one group's state.
type Document struct {
	Version   int    `json:"version"`
	Lineage   string `json:"lineage"`
	Serial    int64  `json:"serial"`
	Group     string `json:"group"`
	Namespace string `json:"namespace,omitempty"`
	// MovedFrom is the namespace the group is moving from (`apply --move-namespace`) while
	// its objects there are not all removed: the next apply removes them (issue 35 item 6).
	MovedFrom string `json:"movedFrom,omitempty"`
	// AdoptedFrom is the key of an earlier release the state was adopted from (issue 46:
	// `shop-front` for `shop.front`): the DNS records still owned under it are the
	// deployment's, and a lock left under it by a run killed mid-adoption is removed once
	// stale.
	AdoptedFrom string                `json:"adoptedFrom,omitempty"`
	Nodes       map[string]*NodeState `json:"nodes,omitempty"`
	// SecretKey is the group's random key (base64) that the hashes of its Secrets' values are
	// keyed with (spec.KeyedHash, issue 35 item 5): made once, by the first apply, render or
	// saved plan of a group with secrets. It is no credential (it opens nothing), but with it
	// a guess of a value can be tested against a hash: `state show` does not print it.
	SecretKey string `json:"secretKey,omitempty"`
	// Spire are the SPIRE servers and namespaces the deployment's SPIRE lane made parts for
	// (internal/engine/spire): written before the lane changes anything, dropped once their
	// parts are retired, so that they go even when the file no longer names them.
	Spire []SpireRecord `json:"spire,omitempty"`
	// Central is where the deployment's central lane made its objects
	// (internal/engine/central): written before the lane makes any, dropped once they are gone.
	Central *CentralRecord `json:"central,omitempty"`
}

// NodeState is what slipway applied for one node.
type NodeState struct {
	MachineID     string      `json:"machineID"`
	Image         ImageRecord `json:"image"`
	PreviousReady string      `json:"previousReady,omitempty"` // ref@digest of the last image that became ready
	// ReadyTemplate is the pod-template-hash of the last pod template that became ready: the
	// rollback target when the live template is not ready (an earlier apply was killed).
	ReadyTemplate string                `json:"readyTemplate,omitempty"`
	LastRollout   *event.Rollout        `json:"lastRollout,omitempty"`
	Roles         map[string]*RoleState `json:"roles,omitempty"`
	Suspended     bool                  `json:"suspended,omitempty"`
	// Protect is the node's state.protect as last applied: a node removed from the file
	// keeps its claim protected until an apply without protect recorded it (SPEC §6a).
	Protect bool `json:"protect,omitempty"`
	// DNS are the record sets published for the node (its names; the zone's mail records on
	// the relay), written before their UPDATE is sent and dropped after they are retired: a
	// name removed from the file is retired even if the server is read back only partly.
	DNS []DNSRecord `json:"dns,omitempty"`
	// StateVersion is the state version the node last ran ready with (SPEC §6a): written
	// only with a rollout that ran ready, so it is never ahead of the data. "": none (a node
	// without a version, or deployed before slipway recorded it).
	StateVersion string `json:"stateVersion,omitempty"`
	// Copy is the copy of /var/lib its volume may hold: recorded before a migration's
	// template is applied, cleared once a template that puts it back ran ready, or the
	// removal Job removed it.
	Copy *StateCopy `json:"copy,omitempty"`
}

// StateCopy is a copy of /var/lib taken at version From before the migration to To.
type StateCopy struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// DNSRecord names a set of records slipway published (SPEC §7).
type DNSRecord struct {
	Name string `json:"name"`
	Kind string `json:"kind"` // address, mx, spf, dmarc
	// Zone is the publish.zone it was published in: it is retired there after the zone
	// changed. "": written before slipway recorded it.
	Zone string `json:"zone,omitempty"`
}

// ImageRecord names a pushed image.
type ImageRecord struct {
	Ref    string `json:"ref"` // registry/namespace/node
	Tag    string `json:"tag,omitempty"`
	Digest string `json:"digest,omitempty"`
}

// RoleState is what slipway applied for one role of a node.
type RoleState struct {
	// MachineID is no longer written: a role pod takes its pod's UID. Older states have one.
	MachineID string      `json:"machineID,omitempty"`
	Replicas  int32       `json:"replicas"`
	Image     ImageRecord `json:"image,omitempty"`
}

// VersionError refuses a document written by a newer slipway.
type VersionError struct {
	Where   string // the state's location
	Version int
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("state %s: version %d is newer than this slipway knows (%d): upgrade slipway",
		e.Where, e.Version, CurrentVersion)
}

// ConflictError refuses a write whose document is not the one stored: it was read at another
// serial (someone wrote since) or it belongs to another lineage (another state altogether).
type ConflictError struct {
	Group                       string
	StoredSerial, GivenSerial   int64
	StoredLineage, GivenLineage string
	Lineage                     bool // true: lineages differ; false: serials differ
}

func (e *ConflictError) Error() string {
	if e.Lineage {
		return fmt.Sprintf("state %s: write refused: the document has lineage %s but the stored state has lineage %s: it belongs to another state",
			e.Group, e.GivenLineage, e.StoredLineage)
	}
	return fmt.Sprintf("state %s: write refused: the document was read at serial %d but the stored state is at serial %d: another run wrote it since",
		e.Group, e.GivenSerial, e.StoredSerial)
}

// GroupError refuses a document that holds another group's state: read as this group's, it
// would make a plan, a status or an apply about the wrong nodes (issue 11 item 6).
type GroupError struct {
	Where string // the state's location
	Want  string // the group the caller works on
	Got   string // the group the document belongs to
}

func (e *GroupError) Error() string {
	return fmt.Sprintf("state %s: holds the state of group %s, not of group %s: point --state at group %s's state",
		e.Where, e.Got, e.Want, e.Want)
}

// checkGroup refuses d (read from where) when it belongs to another group than group.
func checkGroup(where, group string, d *Document) (*Document, error) {
	if d != nil && d.Group != "" && d.Group != group {
		return nil, &GroupError{Where: where, Want: group, Got: d.Group}
	}
	return d, nil
}

// ErrNoGroup is returned by the Store and Locker calls of a backend opened without a group
// (which can still list).
var ErrNoGroup = errors.New("no group given")

// Encode returns the document as indented JSON.
func Encode(d *Document) ([]byte, error) {
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("state %s: encode: %w", d.Group, err)
	}
	return append(b, '\n'), nil
}

// Decode parses a document, refusing one of a newer version. where names it in errors.
func Decode(where string, b []byte) (*Document, error) {
	var d Document
	if err := json.Unmarshal(b, &d); err != nil {
		// A newer version may have changed a field's type: say so rather than "bad JSON".
		if h, herr := decodeHead(b); herr == nil && h.Version > CurrentVersion {
			return nil, &VersionError{Where: where, Version: h.Version}
		}
		return nil, fmt.Errorf("state %s: parse: %w", where, err)
	}
	return &d, checkVersion(where, d.Version)
}

func checkVersion(where string, v int) error {
	switch {
	case v < 1:
		return fmt.Errorf("state %s: parse: no version: not a slipway state", where)
	case v > CurrentVersion:
		return &VersionError{Where: where, Version: v}
	}
	return nil
}

// head is the part of a document a write compares.
type head struct {
	Version int
	Lineage string
	Serial  int64
	Group   string
}

// decodeHead reads version, lineage, serial and group without decoding the nodes: Encode writes them
// first, so a token scan stops long before the bulk of a large state. A document whose keys
// come in another order is decoded in full.
func decodeHead(b []byte) (*head, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	var h head
	seen := 0
	for seen < 4 && dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, err
		}
		v, err := dec.Token()
		if err != nil {
			return nil, err
		}
		if _, isDelim := v.(json.Delim); isDelim {
			break // an object or array before the three scalars: decode in full
		}
		switch k {
		case "version":
			n, _ := v.(json.Number)
			i, err := n.Int64()
			if err != nil {
				return nil, fmt.Errorf("version %v: %w", v, err)
			}
			h.Version = int(i)
			seen++
		case "lineage":
			h.Lineage, _ = v.(string)
			seen++
		case "serial":
			n, _ := v.(json.Number)
			i, err := n.Int64()
			if err != nil {
				return nil, fmt.Errorf("serial %v: %w", v, err)
			}
			h.Serial = i
			seen++
		case "group":
			h.Group, _ = v.(string)
			seen++
		}
	}
	if seen == 4 {
		return &h, nil
	}
	var full head
	if err := json.Unmarshal(b, &full); err != nil {
		return nil, err
	}
	return &full, nil
}

// decodeHeadChecked reads a document's version, lineage and serial, refusing a newer version.
func decodeHeadChecked(where string, b []byte) (*head, error) {
	h, err := decodeHead(b)
	if err != nil {
		return nil, fmt.Errorf("state %s: parse: %w", where, err)
	}
	return h, checkVersion(where, h.Version)
}

// checkWrite compares the document to be written with the stored one (nil: none) and returns
// what to store: a copy with its version, group, lineage (when new) and next serial set, and
// that copy encoded by encode. It is the one rule every backend applies; the backend copies
// those fields back into d (commit) only once the write succeeded, so a refused or failed write
// leaves d as it was.
func checkWrite(group string, stored *head, d *Document, encode func(*Document) ([]byte, error)) (*Document, []byte, error) {
	next, err := nextDocument(group, stored, d)
	if err != nil {
		return nil, nil, err
	}
	data, err := encode(next)
	if err != nil {
		return nil, nil, err
	}
	return next, data, nil
}

func nextDocument(group string, stored *head, d *Document) (*Document, error) {
	if d.Group != "" && d.Group != group {
		return nil, fmt.Errorf("state %s: write refused: the document is of group %s", group, d.Group)
	}
	next := *d
	if stored != nil {
		if stored.Group != "" && stored.Group != group {
			return nil, fmt.Errorf("state %s: write refused: the stored document is the state of group %s", group, stored.Group)
		}
		if d.Lineage != "" && d.Lineage != stored.Lineage {
			return nil, &ConflictError{Group: group, Lineage: true, StoredLineage: stored.Lineage, GivenLineage: d.Lineage,
				StoredSerial: stored.Serial, GivenSerial: d.Serial}
		}
		if d.Serial != stored.Serial {
			return nil, &ConflictError{Group: group, StoredSerial: stored.Serial, GivenSerial: d.Serial,
				StoredLineage: stored.Lineage, GivenLineage: d.Lineage}
		}
		next.Lineage = stored.Lineage
	}
	if next.Lineage == "" {
		next.Lineage = uuid.NewString()
	}
	next.Version = CurrentVersion
	next.Group = group
	next.Serial++
	return &next, nil
}

// headOf returns the head of a stored document; nil for none.
func headOf(d *Document) *head {
	if d == nil {
		return nil
	}
	return &head{Version: d.Version, Lineage: d.Lineage, Serial: d.Serial, Group: d.Group}
}

// commit copies the fields checkWrite set into the caller's document.
func commit(d, written *Document) {
	d.Version, d.Group, d.Lineage, d.Serial = written.Version, written.Group, written.Lineage, written.Serial
}
