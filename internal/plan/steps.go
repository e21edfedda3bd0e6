package plan

import (
	"slices"
	"strings"
	"time"

	"slipway.dev/slipway/internal/spec"
)

// StepKind is what one step of an apply does.
type StepKind string

const (
	// StepApplyObjects applies objects that are not Deployments: the group's namespace and
	// default-deny policy before any node, a node's policies, account, claim and Services.
	StepApplyObjects StepKind = "apply-objects"
	// StepPush pushes one image the registry lacks, before anything of the cluster changes.
	StepPush StepKind = "push"
	// StepStopRole scales a role to 0 and waits for its pods to go, before the template it
	// must match changes (FR-006a).
	StepStopRole StepKind = "stop-role"
	// StepApplyDeployment applies the node's Deployment.
	StepApplyDeployment StepKind = "apply-deployment"
	// StepAwaitRollout follows the node's rollout within Limit and, when it fails, sets the
	// Deployment back as Rollback says (SPEC §6 steps 5–6).
	StepAwaitRollout StepKind = "await-rollout"
	// StepAwaitReady waits within Limit for the node's Deployment to be ready, when roles
	// start in a run that rolls nothing out: roles start only next to a ready node.
	StepAwaitReady StepKind = "await-ready"
	// StepStartRole applies a role's Deployment at Replicas and waits for it within Limit.
	StepStartRole StepKind = "start-role"
	// StepRemoveCopy runs the Job that removes the copy of /var/lib a migration left on the
	// node's volume, once the release at Version ran ready (SPEC §6a).
	StepRemoveCopy StepKind = "remove-copy"
	// StepPrune deletes the objects that left a node (a role removed, say).
	StepPrune StepKind = "prune"
	// StepRemoveNode deletes every object of a node that left the group, and its state.
	StepRemoveNode StepKind = "remove-node"
	// StepRetireDNS retires the node's DNS records that are no longer wanted (a name removed,
	// the node removed), each in one UPDATE, before its objects change (SPEC §7).
	StepRetireDNS StepKind = "retire-dns"
	// StepPublishDNS publishes the node's names at its address, once it is known, after its
	// rollout (before it when its Service is replaced: movedAddress); on the mail relay, the
	// zone's mail records too, after its rollout. One UPDATE per changed set.
	StepPublishDNS StepKind = "publish-dns"
	// StepAwaitAddress waits within Limit for the load-balancer address of the node's Service
	// (Object), before its rollout: a node with its own address (SPEC §7).
	StepAwaitAddress StepKind = "await-address"
	// StepAwaitAccepted waits within Limit for the Gateway's controller to accept each route
	// (Objects) at its current generation, before the rollout: a node behind the Gateway.
	StepAwaitAccepted StepKind = "await-accepted"
	// StepAwaitResolved waits within Limit for each route's references to resolve, after the
	// rollout: a controller may hold a backend without a ready endpoint as unresolved.
	StepAwaitResolved StepKind = "await-resolved"
	// StepAwaitClaim waits within Limit for the claim (Object) made in this run to be bound,
	// before the node's Deployment, when its StorageClass binds claims as they are made: a pod
	// whose claim is unbound cannot be scheduled, and the scheduler tries it again at every
	// volume event. Past Limit the Deployment goes ahead and its rollout says what it waits
	// for. None while the group is suspended: no pod is scheduled.
	StepAwaitClaim StepKind = "await-claim"
)

// ClaimLimit is the longest a new node's Deployment waits for its claim (StepAwaitClaim).
const ClaimLimit = 2 * time.Minute

// Rollback is where a failed rollout goes back to.
type Rollback string

const (
	// RollbackNone: the Deployment is created in this run, nothing ran before it.
	RollbackNone Rollback = "none"
	// RollbackLastReady: the live template when it runs ready, else the last template that
	// became ready (its ReplicaSet); the engine finds which at run time, and there may be none.
	RollbackLastReady Rollback = "last-ready"
)

// Step is one thing apply does to the cluster. Which fields are set depends on Kind.
type Step struct {
	Kind StepKind `json:"kind"`
	Node string   `json:"node,omitempty"` // "" for the group's own objects
	Role string   `json:"role,omitempty"` // stop-role, start-role
	// Image is the tag a push step pushes (<repository>:<tag>), ImageName the image's name.
	Image     string `json:"image,omitempty"`
	ImageName string `json:"imageName,omitempty"`
	// Object is the Deployment of apply-deployment, await-*, stop-role and start-role.
	Object *Key `json:"object,omitempty"`
	// Objects are what apply-objects applies and prune and remove-node delete, in plan order.
	Objects []Key `json:"objects,omitempty"`
	// Action is what apply-deployment does, and start-role to a role's Deployment ("" for a
	// role only stopped and started again).
	Action Action `json:"action,omitempty"`
	// Replicas a start-role starts the role at, or an await-* waits for (0: suspended).
	Replicas int32         `json:"-"`
	Limit    time.Duration `json:"-"` // await-rollout, await-ready, start-role
	Rollback Rollback      `json:"rollback,omitempty"`
	// Payload is a lane's data in its step (lanepart.go): the records a publish-dns or
	// retire-dns changes (DNSPublish, DNSRetire), the migration an apply-deployment or
	// await-rollout rolls out (MigrationCopy, MigrationRestore), the version a remove-copy
	// keeps (CopyRemoval); a spire step's SpireChanges (the plan's own, Plan.Spire), a
	// central step's CentralChanges (a share of Plan.Central). The first are members of the
	// step's JSON, as they were when they were fields of Step; the others the plan keeps in
	// its own fields (stepjson.go).
	Payload StepPayload `json:"-"`
}

// NodeSteps are one node's steps, in order.
type NodeSteps struct {
	Node  string `json:"node"`
	Steps []Step `json:"steps"`
}

// Steps is everything apply does, in the order it does it: a node's pushes before its other
// steps (a failed push stops its node before anything of it changes in the cluster), Before
// once one push is done (with every push failing, the cluster is left as it was), then each
// node's other steps (nodes in parallel), then After.
type Steps struct {
	Before []Step      `json:"before,omitempty"` // the group's namespace and default-deny policy
	Nodes  []NodeSteps `json:"nodes"`            // every node of the group file, in its order
	After  []Step      `json:"after,omitempty"`  // the nodes that left the group
}

// Node returns the steps of node, a removed node's included; nil when it has none.
func (s *Steps) Node(name string) []Step {
	if s == nil {
		return nil
	}
	for _, ns := range s.Nodes {
		if ns.Node == name {
			return ns.Steps
		}
	}
	var out []Step
	for _, st := range s.After {
		if st.Node == name {
			out = append(out, st)
		}
	}
	return out
}

// BuildSteps turns p into the steps apply runs, for group g (the file p was planned from);
// limit is a node's rollout time limit. It holds every decision of the order of SPEC §6:
// which roles stop, whether the node's readiness is awaited before roles start, at how many
// replicas they start, and what a failed rollout goes back to.
func BuildSteps(p *Plan, g *spec.Group, limit func(*spec.Node) time.Duration) *Steps {
	s := &Steps{Nodes: []NodeSteps{}}
	// Apply refuses a plan with conflicts (or a namespace being deleted) before any change.
	if !p.HasChanges() || p.Blocked() != nil {
		for _, n := range g.Nodes {
			s.Nodes = append(s.Nodes, NodeSteps{Node: n.Name})
		}
		return s
	}
	var groupGone []Key // the group's objects the file no longer wants (spire: removed, say)
	if gp := p.Node(""); gp != nil {
		if keys := keysWhere(gp.Changes, func(c Change) bool { return c.Action != Delete }); len(keys) > 0 {
			s.Before = append(s.Before, Step{Kind: StepApplyObjects, Objects: keys})
		}
		groupGone = keysWhere(gp.Changes, func(c Change) bool { return c.Action == Delete })
	}
	s.Before = append(s.Before, spireSteps(p)...) // after the account it reviews tokens as
	cb, ca := centralSteps(p)
	s.Before = append(s.Before, cb...)
	ix, images := p.Index(), imagesByNode(p)
	for _, n := range g.Nodes {
		ns := NodeSteps{Node: n.Name}
		// A node with an object being deleted by someone else fails without a step.
		if np := ix.Node(n.Name); nodeBlocked(np) == nil {
			ns.Steps = nodeSteps(p, g, n, limit(n), np, ix, images[n.Name])
		}
		s.Nodes = append(s.Nodes, ns)
	}
	for _, np := range p.Nodes {
		if np.Node == "" || g.Node(np.Node) != nil {
			continue
		}
		if rs := recordsWhere(np.Records, func(r RecordChange) bool { return r.Action == Delete }); len(rs) > 0 {
			s.After = append(s.After, Step{Kind: StepRetireDNS, Node: np.Node, Payload: DNSRetire{rs}})
		}
		if keys := keysWhere(np.Changes, func(c Change) bool { return c.Action == Delete }); len(keys) > 0 {
			s.After = append(s.After, Step{Kind: StepRemoveNode, Node: np.Node, Objects: keys})
		}
	}
	s.After = append(s.After, ca...) // once no node uses them
	if len(groupGone) > 0 {
		// Last: a node's pods may use them until its own steps are done. The namespace is never
		// among them (compute leaves it to destroy).
		s.After = append(s.After, Step{Kind: StepPrune, Objects: groupGone})
	}
	return s
}

// imagesByNode groups p's images by node, in p's order.
func imagesByNode(p *Plan) map[string][]Image {
	m := map[string][]Image{}
	for _, im := range p.Images {
		m[im.Node] = append(m[im.Node], im)
	}
	return m
}

// nodeSteps are the steps of one node of the group file (SPEC §6 steps 1–8): np is its plan
// (nil: no change), ix indexes p, images are the node's.
func nodeSteps(p *Plan, g *spec.Group, n *spec.Node, limit time.Duration, np *NodePlan, ix *Index, images []Image) []Step {
	var out []Step
	for _, im := range images {
		if im.Push {
			out = append(out, Step{Kind: StepPush, Node: n.Name, ImageName: im.Name, Image: im.Tag})
		}
	}
	if np == nil {
		return out
	}
	if rs := recordsWhere(np.Records, func(r RecordChange) bool { return r.Action == Delete }); len(rs) > 0 {
		out = append(out, Step{Kind: StepRetireDNS, Node: n.Name, Payload: DNSRetire{rs}})
	}
	var early []RecordChange // published before the rollout (movedAddress)
	if len(np.Changes) > 0 {
		var steps []Step
		steps, early = objectSteps(p, g, n, np, limit, ix)
		out = append(out, steps...)
	} else if np.RemoveCopy != nil {
		out = append(out, removeCopy(p.Namespace, n.Name, np.RemoveCopy.To, limit))
	}
	if rs := recordsWhere(np.Records, func(r RecordChange) bool {
		return (r.Action == Create || r.Action == Update) &&
			!slices.ContainsFunc(early, func(e RecordChange) bool { return e.Name == r.Name && e.Kind == r.Kind })
	}); len(rs) > 0 {
		out = append(out, Step{Kind: StepPublishDNS, Node: n.Name, Payload: DNSPublish{rs}})
	}
	return out
}

// objectSteps are the steps of a node's changed objects: policies and Services, roles
// stopped, the Deployment and its rollout, roles started, leftovers pruned; and the address
// records they publish before the rollout (movedAddress).
func objectSteps(p *Plan, g *spec.Group, n *spec.Node, np *NodePlan, limit time.Duration, ix *Index) ([]Step, []RecordChange) {
	var out []Step
	mainKey := Key{Kind: "Deployment", Namespace: p.Namespace, Name: n.Name}
	roleKey := func(r *spec.Role) Key {
		return Key{Kind: "Deployment", Namespace: p.Namespace, Name: spec.RoleObjectName(n.Name, r.Name)}
	}
	main := ix.Change(mainKey)
	var removed []Step
	if np.RemoveCopy != nil {
		// Before the rollout: a migration in this run must not keep it as its backup.
		removed = []Step{removeCopy(p.Namespace, n.Name, np.RemoveCopy.To, limit)}
	}
	addr := addressSteps(p, g, n)
	keys := keysWhere(np.Changes, func(c Change) bool { return c.Action != Delete && c.Key.Kind != "Deployment" })
	steps, early := movedAddress(p, g, n, np, keys, removed, addr.before)
	out = append(out, steps...)
	stopped := stoppedRoles(n, main, np.Migration != nil, roleKey, ix)
	for _, r := range stopped {
		k := roleKey(n.Role(r))
		out = append(out, Step{Kind: StepStopRole, Node: n.Name, Role: r, Object: &k})
	}
	claimKey := Key{Kind: "PersistentVolumeClaim", Namespace: p.Namespace, Name: spec.ClaimName(n.Name)}
	if c := ix.Change(claimKey); main != nil && !p.Suspended && c != nil && (c.Action == Create || c.Action == Replace) {
		out = append(out, Step{Kind: StepAwaitClaim, Node: n.Name, Object: &claimKey, Limit: min(limit, ClaimLimit)})
	}
	if main != nil {
		rb := RollbackLastReady
		if main.Action == Create {
			rb = RollbackNone
		}
		replicas := int32(1)
		if p.Suspended {
			replicas = 0
		}
		apply, await := migrationPayloads(np.Migration)
		out = append(out,
			Step{Kind: StepApplyDeployment, Node: n.Name, Object: &mainKey, Action: main.Action, Payload: apply},
			Step{Kind: StepAwaitRollout, Node: n.Name, Object: &mainKey, Replicas: replicas, Limit: limit, Rollback: rb, Payload: await})
		if np.Migration != nil && !p.Suspended {
			out = append(out, removeCopy(p.Namespace, n.Name, np.Migration.To, limit))
		}
	}
	out = append(out, addr.after...)
	// Roles start only next to a ready node: without a rollout in this run, the node's
	// readiness is awaited first.
	var starts []Step
	for _, r := range n.Roles {
		rc := ix.Change(roleKey(r))
		if rc == nil && !slices.Contains(stopped, r.Name) {
			continue
		}
		k := roleKey(r)
		// A role only stopped is unchanged: its start puts its replicas back.
		st := Step{Kind: StepStartRole, Node: n.Name, Role: r.Name, Object: &k, Replicas: r.Replicas, Limit: limit}
		if rc != nil {
			st.Action = rc.Action
		}
		if rc != nil && rc.Action == Update && !slices.Contains(stopped, r.Name) && !p.Suspended {
			// Rolled while it runs (its image stays): a failure sets its last ready
			// template back instead of leaving it at 0.
			st.Rollback = RollbackLastReady
		}
		if p.Suspended {
			st.Replicas = 0
		}
		starts = append(starts, st)
	}
	if main == nil && len(starts) > 0 {
		out = append(out, Step{Kind: StepAwaitReady, Node: n.Name, Object: &mainKey, Replicas: 1, Limit: limit})
	}
	out = append(out, starts...)
	if keys := keysWhere(np.Changes, func(c Change) bool { return c.Action == Delete }); len(keys) > 0 {
		out = append(out, Step{Kind: StepPrune, Node: n.Name, Objects: keys})
	}
	return out, early
}

// diffTouches reports whether a field diff touches a path that contains part.
func diffTouches(diff []FieldDiff, part string) bool {
	return slices.ContainsFunc(diff, func(d FieldDiff) bool { return strings.Contains(d.Path, part) })
}

func keysWhere(cs []Change, keep func(Change) bool) []Key {
	var ks []Key
	for _, c := range cs {
		if keep(c) {
			ks = append(ks, c.Key)
		}
	}
	return ks
}
