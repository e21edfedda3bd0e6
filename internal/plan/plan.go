// Package plan compares what the group file wants (rendered objects), what the state recorded
// and what the cluster holds, and says per node what apply will do: images to push, objects to
// create, update, replace or delete, with field diffs, destructive steps marked, and drift. It
// is pure: the engine reads the cluster (lists and server-side-apply dry runs) and hands the
// results in, so everything here is a function of data and imports no client-go.
package plan

import (
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// FormatVersion is the version of a saved plan file.
const FormatVersion = 1

// Action is what apply does to one object.
type Action string

const (
	Create  Action = "create"
	Update  Action = "update"
	Replace Action = "replace" // delete and create: an immutable field changes
	Delete  Action = "delete"
	// Conflict: an object of that name exists that slipway did not make for this group; apply
	// refuses to take it over (SPEC §1: it touches nothing it did not make).
	Conflict Action = "conflict"
	// Terminating: the object is being deleted by someone else; apply will not roll out its
	// node (or, for the namespace, anything) until it is gone.
	Terminating Action = "terminating"
)

// Key names one object: the plan, the engine and kube (which lists and deletes by it) share it.
type Key struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

func (k Key) String() string {
	if k.Namespace == "" {
		return k.Kind + " " + k.Name
	}
	return k.Kind + " " + k.Namespace + "/" + k.Name
}

// KeyOf returns the key of obj.
func KeyOf(obj *unstructured.Unstructured) Key {
	return Key{Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// Label is the value of obj's label key, read in place: GetLabels copies every label into a
// new map, and a plan of 1,000 nodes reads a label of each of its 10,000 objects several times.
func Label(obj *unstructured.Unstructured, key string) string {
	s, _, _ := unstructured.NestedString(obj.Object, "metadata", "labels", key)
	return s
}

// Image is one image of the group: where it is and whether apply pushes it.
type Image struct {
	Name   string `json:"name"` // the node, or <node>-<role> for a service image
	Node   string `json:"node"`
	Tag    string `json:"tag"`    // <repository>:<tag>
	Digest string `json:"digest"` // <repository>@sha256:…, what the Deployment names
	Push   bool   `json:"push"`   // the registry lacks the tag
}

// FieldDiff is one changed field: Old absent means added, New absent means removed.
type FieldDiff struct {
	Path string `json:"path"`
	Old  string `json:"old,omitempty"`
	New  string `json:"new,omitempty"`
}

// DiffTouches reports whether a field diff touches a path that contains part.
func DiffTouches(diff []FieldDiff, part string) bool {
	for _, d := range diff {
		if strings.Contains(d.Path, part) {
			return true
		}
	}
	return false
}

// Change is one object apply touches.
type Change struct {
	Key         Key         `json:"key"`
	Action      Action      `json:"action"`
	Destructive bool        `json:"destructive,omitempty"` // loses data: a claim deleted or replaced
	Reason      string      `json:"reason,omitempty"`
	Diff        []FieldDiff `json:"diff,omitempty"`
	// ResourceVersion of the live object the change was planned against; a saved plan is
	// refused when it moved.
	ResourceVersion string `json:"resourceVersion,omitempty"`
	// UID of that live object: a delete carries it as a precondition, so that an object
	// re-made by someone else since it was judged is not deleted (issue 35).
	UID string `json:"uid,omitempty"`
}

// Drift is a node whose cluster runs another image than the state recorded.
type Drift struct {
	Node    string `json:"node"`
	Running string `json:"running"` // the image the Deployment names now
	State   string `json:"state"`   // the image the state recorded as desired
	Note    string `json:"note"`
}

// NodePlan is what apply does for one node ("" is the group: Namespace and default-deny).
type NodePlan struct {
	Node    string   `json:"node"`
	Changes []Change `json:"changes,omitempty"`
	Removed bool     `json:"removed,omitempty"` // the node left the group: its objects go
	// KeptClaims are the claims of a removed node that stay (apply --keep-claims): its state
	// record stays too, cut to what reattaches them (machine ID, protection, state version).
	KeptClaims []Key `json:"keptClaims,omitempty"`
	// Records are the DNS records apply publishes, changes or retires for the node, and
	// the conflicts that refuse it (SPEC §7).
	Records []RecordChange `json:"records,omitempty"`
	// Migration is a state version change rolled out in this run (SPEC §6a).
	Migration *Migration `json:"migration,omitempty"`
	// RemoveCopy is a copy of /var/lib the volume holds that is no longer needed (its
	// migration ran ready, but the removal did not finish): apply removes it.
	RemoveCopy *Copy `json:"removeCopy,omitempty"`
}

// Plan is the outcome of planning one group.
type Plan struct {
	Version      int        `json:"version"`
	Group        string     `json:"group"`
	Namespace    string     `json:"namespace"`
	Created      time.Time  `json:"created"`
	StateSerial  int64      `json:"stateSerial"`
	StateLineage string     `json:"stateLineage,omitempty"`
	Suspended    bool       `json:"suspended,omitempty"`
	Images       []Image    `json:"images,omitempty"`
	Nodes        []NodePlan `json:"nodes"`
	Drift        []Drift    `json:"drift,omitempty"`
	// SecretKey is the key the hashes of the Secrets' values were keyed with: the state's, or
	// one made for this plan when the state has none (apply records it). Never written out:
	// a saved plan's is the state's again (issue 35 item 5).
	SecretKey []byte `json:"-"`
	// ForeignNamespace: the namespace exists and slipway did not create it for this group, so
	// apply deploys into it without taking it over and destroy removes only the group's objects.
	ForeignNamespace bool `json:"foreignNamespace,omitempty"`
	// Destroy marks the plan of `plan -destroy`: what destroy removes. It is shown, never applied.
	Destroy bool `json:"destroy,omitempty"`
	// Notes are things the operator should know that change nothing (a feature the cluster
	// lacks, what destroy removes besides objects).
	Notes []string `json:"notes,omitempty"`
	// Addresses maps each published node to the addresses its names point at (IPs or host
	// names): a node behind the Gateway has the Gateway's, any other its Service's
	// load-balancer ingress; none while it is not known (the Service has none yet). Nil
	// without `publish:` (SPEC §7).
	Addresses map[string][]string `json:"addresses,omitempty"`
	// MachineIDs of every node and role (<node>/<role>), new ones made by this plan.
	MachineIDs map[string]string `json:"machineIDs,omitempty"`
	// Desired holds the rendered objects apply will apply, in apply order, so that a saved
	// plan applies exactly what was shown.
	Desired []*unstructured.Unstructured `json:"desired,omitempty"`
	// Deferred converts the objects of Desired that stand there as stubs (IsStub): found
	// unchanged before their conversion. Write materializes them; a plan read back has none.
	Deferred Deferred `json:"-"`
	// Steps are what apply does, in order (BuildSteps); nil in a plan read from a file
	// saved before steps were planned.
	Steps *Steps `json:"steps,omitempty"`
	// Move is the group's move from the namespace its state records (or a move not
	// finished yet) to Namespace; nil when there is none.
	Move *Move `json:"move,omitempty"`
	// Spire are the SPIRE lane's changes (FR-015 to FR-017); nil without `spire:`.
	Spire []SpireChange `json:"spire,omitempty"`
	// Central are the central lane's changes (issue 44); nil without `central:`.
	Central []CentralChange `json:"central,omitempty"`
}

// Counts are the plan's own totals: the images it pushes and the objects it changes (a
// namespace move's deletions among them) or refuses to. Each lane counts its own changes
// (LanePart.Counts); Totals are both.
type Counts struct {
	Push, Create, Update, Replace, Delete int
	// Conflict and Terminating are objects apply refuses to go on with.
	Conflict, Terminating int
}

// Counts returns the plan's own totals.
func (p *Plan) Counts() Counts {
	var c Counts
	for _, im := range p.Images {
		if im.Push {
			c.Push++
		}
	}
	for _, n := range p.Nodes {
		for _, ch := range n.Changes {
			switch ch.Action {
			case Create:
				c.Create++
			case Update:
				c.Update++
			case Replace:
				c.Replace++
			case Delete:
				c.Delete++
			case Conflict:
				c.Conflict++
			case Terminating:
				c.Terminating++
			}
		}
	}
	if p.Move != nil {
		c.Delete += len(p.Move.Delete)
	}
	return c
}

// HasChanges reports whether apply would change anything: any of its totals, its own or a
// lane's (a namespace move alone is a change), is not zero.
func (p *Plan) HasChanges() bool { return !p.Totals().Zero() }

// Node returns the plan of node, or nil.
func (p *Plan) Node(name string) *NodePlan {
	for i := range p.Nodes {
		if p.Nodes[i].Node == name {
			return &p.Nodes[i]
		}
	}
	return nil
}

// Index looks p's node plans and changes up by name and key, for callers that look up one
// per node: the steps of a first apply of 2,000 nodes scanned its 10,000 changes once per
// node and role (issue 17). It finds what Node and Change find; p's nodes and changes must
// not be added to while it is used.
type Index struct {
	nodes   map[string]*NodePlan
	changes map[Key]*Change
}

// Index indexes p.
func (p *Plan) Index() *Index {
	ix := &Index{nodes: map[string]*NodePlan{}, changes: map[Key]*Change{}}
	for i := range p.Nodes {
		np := &p.Nodes[i]
		if ix.nodes[np.Node] == nil { // the first, as Node finds it
			ix.nodes[np.Node] = np
		}
		for j := range np.Changes {
			if c := &np.Changes[j]; ix.changes[c.Key] == nil {
				ix.changes[c.Key] = c
			}
		}
	}
	return ix
}

// Node is p.Node(name).
func (ix *Index) Node(name string) *NodePlan { return ix.nodes[name] }

// Change is p.Change(k).
func (ix *Index) Change(k Key) *Change { return ix.changes[k] }

// Change returns the change of k, or nil when k is unchanged.
func (p *Plan) Change(k Key) *Change {
	for i := range p.Nodes {
		for j := range p.Nodes[i].Changes {
			if p.Nodes[i].Changes[j].Key == k {
				return &p.Nodes[i].Changes[j]
			}
		}
	}
	return nil
}

// Input is everything Compute needs, read by the engine.
type Input struct {
	Group, Namespace string
	StateSerial      int64
	StateLineage     string
	Suspended        bool
	// Desired are the rendered objects in apply order.
	Desired []*unstructured.Unstructured
	// Live are the objects of the group in the cluster (the namespace included when it exists).
	Live map[Key]*unstructured.Unstructured
	// DryRun holds, for desired objects that exist but are not Subset of their live object,
	// what a server-side-apply dry run returned.
	DryRun map[Key]*unstructured.Unstructured
	// Immutable holds the dry-run error of objects whose change needs a re-create.
	Immutable map[Key]string
	// Unchanged holds desired objects the caller already found Subset of their live object
	// (deciding what to dry-run); Compute compares only the others. Every stub in Desired is
	// among them, and Deferred converts it.
	Unchanged map[Key]bool
	Deferred  Deferred
	// Foreign holds live objects of the group's namespace that are not the group's (no
	// slipway.dev/group label of it); one with a desired object's name is a conflict.
	Foreign map[Key]*unstructured.Unstructured
	// ForeignNamespace: the namespace exists and is not the group's (see Plan).
	ForeignNamespace bool
	Images           []Image
	// StateImages maps a node to the image (ref@digest) the state recorded for it, and
	// RolledBack the nodes whose last rollout was set back.
	StateImages map[string]string
	RolledBack  map[string]string // node → the state's rollout message
	// Failed maps a node whose last rollout failed with nothing to roll back to (a first
	// deploy) to the state's message: its Deployment is as desired but never became ready, so
	// apply follows its rollout again (SPEC §6: a failed apply retried tries it again).
	Failed map[string]string
	// Interrupted maps a node whose state says a rollout is in flight (an apply or resume
	// stopped while it waited, or a template applied while the group was suspended) to the
	// state's message: apply follows that rollout again, or, while suspended, resume does.
	Interrupted map[string]string
	// NotReady maps a node whose live Deployment should run pods but does not have them all
	// ready to how it stands: whatever the state says, apply waits for it (and rolls it back).
	NotReady   map[string]string
	MachineIDs map[string]string
	// RunningImages maps a node to the image its live Deployment names.
	RunningImages map[string]string
	// Versions maps a node to its state version (the file's, else its image's label),
	// StateVersions to the one the state recorded it ran ready with, Copies to the copy of
	// /var/lib the state says its volume may hold (SPEC §6a).
	Versions, StateVersions map[string]string
	Copies                  map[string]Copy
	// ForeignJobs maps a node to the live Job named as its copy's removal Job (<node>-state)
	// when slipway did not make it for the group: a removal of the copy is then a conflict
	// (issue 35 item 3), never a delete of someone else's Job.
	ForeignJobs map[string]Object
}
