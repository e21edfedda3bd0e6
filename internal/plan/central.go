package plan

import (
	"fmt"
	"strings"
)

// StepCentral makes the deployment's objects in the central services (issue 44): before any
// node, the logins, their OpenBao static roles, the databases, their extensions and the KV
// entries the file adds or changes; after every node, what the file no longer has.
const StepCentral StepKind = "central"

// CentralWhat is what a CentralChange changes.
type CentralWhat string

const (
	CentralLogin      CentralWhat = "login"       // a PostgreSQL login role
	CentralStaticRole CentralWhat = "static-role" // its OpenBao database static role
	CentralDatabase   CentralWhat = "database"    // a PostgreSQL database
	CentralExtension  CentralWhat = "extension"   // an extension in one of them (<db>/<ext>)
	CentralKV         CentralWhat = "kv"          // a KV v2 entry
	// An S3 key pair: a user of the S3 server and the KV entry that holds its secret key.
	CentralKeyPair CentralWhat = "key-pair"
	CentralBucket  CentralWhat = "bucket" // an S3 bucket, owned by a key pair
)

// CentralOrder is the order the lane makes its objects in (a key pair before the buckets it
// owns).
var CentralOrder = []CentralWhat{CentralLogin, CentralStaticRole, CentralDatabase, CentralExtension, CentralKV,
	CentralKeyPair, CentralBucket}

// CentralChange is one change of the central lane. It names objects and says what changes
// (a connection limit, an owner, a rotation period), never a value: no password or KV value
// is in a plan.
type CentralChange struct {
	What   CentralWhat `json:"what"`
	Key    string      `json:"key"`  // the file's name (central.<what>s.<key>)
	Name   string      `json:"name"` // the server's: <identity>.<key>, a KV path, <db>/<ext>
	Action Action      `json:"action"`
	Reason string      `json:"reason,omitempty"`
}

func (c CentralChange) String() string {
	s := fmt.Sprintf("%s %s", c.What, c.Name)
	if c.Reason != "" {
		s += ": " + c.Reason
	}
	return s
}

// centralSteps are the lane's steps: the adds and changes before the nodes, the deletions
// (the file dropped them) after.
func centralSteps(p *Plan) (before, after []Step) {
	var add, del []CentralChange
	for _, c := range p.Central {
		if c.Action == Delete {
			del = append(del, c)
		} else {
			add = append(add, c)
		}
	}
	if len(add) > 0 {
		before = []Step{{Kind: StepCentral, Payload: CentralChanges(add)}}
	}
	if len(del) > 0 {
		after = []Step{{Kind: StepCentral, Payload: CentralChanges(del)}}
	}
	return before, after
}

// centralStepText is how plan prints a central step.
func centralStepText(cs []CentralChange) string {
	n := map[CentralWhat]int{}
	for _, c := range cs {
		n[c.What]++
	}
	var parts []string
	for _, w := range CentralOrder {
		if n[w] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[w], w))
		}
	}
	if len(cs) > 0 && cs[0].Action == Delete {
		return "remove from the central services what the file no longer has (" + strings.Join(parts, ", ") + ")"
	}
	return "make the central services' objects before any node (" + strings.Join(parts, ", ") + ")"
}
