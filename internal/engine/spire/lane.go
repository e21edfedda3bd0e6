// Package spire is slipway's SPIRE lane (FR-015 to FR-017): with `spire:` in the group file,
// every node's SPIRE agent attests with k8s_psat, using the projected token of its account
// node-<node>, to a server that reviews the token through the cluster's API. The lane plans
// and makes what the server needs for that: the token-review account's rights (a
// ClusterRole and its binding), its kubeconfig and the allow list on the spire node (over
// SSH, through the process's stdin), and per node an alias entry on the k8s_psat selectors
// with the host entry below it (over the registration API, with fixed IDs). The engine
// calls it through Lane: Plan before the objects are rendered, Apply as the step `spire`
// before any node, Destroy with the group.
//
// Nothing secret leaves the lane: the kubeconfig's token goes from the API server to the
// spire node in the SSH session's stdin; what the plan reads back of the kubeconfig has its
// token line taken out on the spire node.
package spire

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
)

// Registrar is the SPIRE server's registration API, as the lane uses it.
type Registrar interface {
	// Bundle is the server's X.509 trust bundle, PEM.
	Bundle(ctx context.Context) (string, error)
	// Entries are every registration entry of the server.
	Entries(ctx context.Context) ([]plan.SpireEntryDef, error)
	CreateEntries(ctx context.Context, es []plan.SpireEntryDef) error
	UpdateEntries(ctx context.Context, es []plan.SpireEntryDef) error
	DeleteEntries(ctx context.Context, ids []string) error
	// Agents are the SPIFFE IDs of the agents the server attested with k8s_psat for cluster.
	Agents(ctx context.Context, cluster string) ([]string, error)
	// EvictAgents deletes the agents ids; one gone already is fine.
	EvictAgents(ctx context.Context, ids []string) error
}

// ConfigNode is the spire node: Run runs script (POSIX sh, read from stdin, data after it)
// and returns its stdout.
type ConfigNode interface {
	Run(ctx context.Context, script string) (string, error)
}

// Cluster is what the lane reads and changes of the cluster (kube.Client has it).
type Cluster interface {
	KubeSystemUID(ctx context.Context) (string, error)
	SchedulableNodes(ctx context.Context) (int, error)
	SpireAgentPods(ctx context.Context, except string) (kube.AgentPods, error)
	SpireRBAC(ctx context.Context, ns, deployment string) (kube.RBACState, error)
	ApplySpireRBAC(ctx context.Context, ns, deployment string) error
	DeleteSpireRBAC(ctx context.Context, deployment string) error
	ServiceAccountToken(ctx context.Context, ns, name string, life time.Duration) (kube.AccountToken, error)
	APIServer() (string, []byte, error)
}

var _ Cluster = (*kube.Client)(nil)

// TokenLife is what the lane asks of the kubeconfig's token; a token past half its life is
// made again by the next apply.
const TokenLife = 365 * 24 * time.Hour

// Lane is the SPIRE lane of one deployment in its namespace.
type Lane struct {
	Spire *spec.Spire
	// Group is the deployment's identity (spec.Group.Name): every per-deployment part of the
	// lane (files, entry IDs, rights) is keyed by it, never by the namespace alone.
	Group     string
	Namespace string
	Nodes     []string // the group's nodes, by name
	// PodLabels are the nodes' LabelSpirePod values, as render made them for this plan: the
	// alias entries select them.
	PodLabels map[string]string
	Server    Registrar
	Node      ConfigNode
	Kube      Cluster
	// APIServer is the cluster's API server as the spire node reaches it
	// (K8S_SPIRE_API_SERVER); "": the kubeconfig's.
	APIServer string
	Now       func() time.Time // nil: time.Now
}

func (l *Lane) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

// Planned is what the lane read and would change.
type Planned struct {
	Cluster string // <kube-system UID>-<namespace> (FR-016)
	Bundle  string // the server's trust bundle, for the ConfigMap spire-agent
	Changes []plan.SpireChange
	Notes   []string
}

// Read is what render needs of the lane: the cluster's name on the server and the server's
// trust bundle.
func (l *Lane) Read(ctx context.Context) (cluster, bundle string, err error) {
	uid, err := l.Kube.KubeSystemUID(ctx)
	if err != nil {
		return "", "", fmt.Errorf("spire: %w", err)
	}
	if bundle, err = l.Server.Bundle(ctx); err != nil {
		return "", "", fmt.Errorf("spire server %s: bundle: %w", l.Spire.Server, err)
	}
	return spec.SpireCluster(uid, l.Namespace), bundle, nil
}

// Plan reads the cluster, the server and the spire node and says what Apply changes. It
// refuses an entry whose SPIFFE ID the server gives another entry with other selectors.
func (l *Lane) Plan(ctx context.Context) (*Planned, error) {
	for _, n := range l.Nodes {
		if !podLabelValue.MatchString(l.PodLabels[n]) {
			return nil, fmt.Errorf("spire: node %s: its pod's label %s is %q, not the digest render makes: the alias entry has no pod to bind to", n, spec.LabelSpirePod, l.PodLabels[n])
		}
	}
	cluster, bundle, err := l.Read(ctx)
	if err != nil {
		return nil, err
	}
	p := &Planned{Cluster: cluster, Bundle: bundle}
	live, err := l.Server.Entries(ctx)
	if err != nil {
		return nil, fmt.Errorf("spire server %s: entries: %w", l.Spire.Server, err)
	}
	want := wantEntries(l.Spire.TrustDomain, p.Cluster, l.Group, l.Namespace, l.Nodes, l.PodLabels)
	legacy := legacyOf(p.Cluster, l.Nodes, live)
	mine := func(id string) bool {
		return entryNode(p.Cluster, l.Group, id) != "" || slices.ContainsFunc(legacy, func(e plan.SpireEntryDef) bool { return e.ID == id })
	}
	if err := conflicts(want, live, mine); err != nil {
		return nil, err
	}
	rbac, err := l.Kube.SpireRBAC(ctx, l.Namespace, l.Group)
	if err != nil {
		return nil, fmt.Errorf("spire: %w", err)
	}
	if rbac.Role == kube.RBACForeign || rbac.Binding == kube.RBACForeign {
		return nil, fmt.Errorf("spire: clusterrole or clusterrolebinding %s exists and is not deployment %s's (no %s=%s label): slipway neither takes nor changes it; delete it or rename the deployment",
			kube.SpireRBACName(l.Group), l.Group, spec.LabelGroup, l.Group)
	}
	p.Changes = append(p.Changes, rbacChanges(p.Cluster, l.Namespace, l.Group, rbac)...)
	remote, err := l.readRemote(ctx, p.Cluster)
	if err != nil {
		return nil, err
	}
	host, ca, err := l.apiServer()
	if err != nil {
		return nil, err
	}
	if c := kubeconfigChange(p.Cluster, remote, kubeconfigShape{server: host, ca: ca, namespace: l.Namespace}, l.now()); c != nil {
		p.Changes = append(p.Changes, *c)
	}
	p.Changes = append(p.Changes, allowChanges(p.Cluster, l.Namespace, l.Nodes, remote.allow)...)
	p.Changes = append(p.Changes, legacyChanges(p.Cluster, remote)...)
	node := func(id string) string {
		if n := entryNode(p.Cluster, l.Group, id); n != "" {
			return n
		}
		return legacyNode(p.Cluster, id)
	}
	p.Changes = append(p.Changes, entryChanges(p.Cluster, want, append(ours(p.Cluster, l.Group, live), legacy...), node)...)
	for _, f := range remote.foreign {
		p.Notes = append(p.Notes, fmt.Sprintf("spire: the spire node's allow directory of %s holds %q, which is no account name: slipway left it out of k8s_psat.hcl and does not touch it", l.Group, f))
	}
	notes, err := l.agentPods(ctx)
	if err != nil {
		return nil, err
	}
	p.Notes = append(p.Notes, notes...)
	return p, nil
}

// PlanDestroy says what Destroy removes of the deployment, and only of it: its entries, its
// allow list and kubeconfig on the spire node, its rights; the agents the server attested
// for the cluster go with the cluster's last deployment (no other has files there).
func (l *Lane) PlanDestroy(ctx context.Context) ([]plan.SpireChange, error) {
	uid, err := l.Kube.KubeSystemUID(ctx)
	if err != nil {
		return nil, fmt.Errorf("spire: %w", err)
	}
	cluster := spec.SpireCluster(uid, l.Namespace)
	var out []plan.SpireChange
	live, err := l.Server.Entries(ctx)
	if err != nil {
		return nil, fmt.Errorf("spire server %s: entries: %w", l.Spire.Server, err)
	}
	node := func(id string) string { return entryNode(cluster, l.Group, id) }
	out = append(out, entryChanges(cluster, nil, ours(cluster, l.Group, live), node)...)
	remote, err := l.readRemote(ctx, cluster)
	if err != nil {
		return nil, err
	}
	out = append(out, allowChanges(cluster, l.Namespace, nil, remote.allow)...)
	if remote.kubeconfig != nil {
		out = append(out, plan.SpireChange{What: plan.SpireKubeconfig, Name: cluster, Action: plan.Delete, Cluster: cluster})
	}
	// The cluster's agents go when nothing else keeps the cluster on the server: no other
	// deployment's files, no legacy files (another deployment's, of the release before).
	others, err := l.otherDeployments(ctx, cluster)
	if err != nil {
		return nil, err
	}
	if len(out) > 0 && !others && !remote.legacyKubeconfig && len(remote.legacyAllow) == 0 {
		agents, err := l.Server.Agents(ctx, cluster)
		if err != nil {
			return nil, fmt.Errorf("spire server %s: agents: %w", l.Spire.Server, err)
		}
		for _, id := range agents {
			out = append(out, plan.SpireChange{What: plan.SpireAgent, Name: id, Action: plan.Delete, Cluster: cluster})
		}
	}
	rbac, err := l.Kube.SpireRBAC(ctx, l.Namespace, l.Group)
	if err != nil {
		return nil, fmt.Errorf("spire: %w", err)
	}
	name := kube.SpireRBACName(l.Group)
	if rbac.Role != "missing" && rbac.Role != kube.RBACForeign {
		out = append(out, plan.SpireChange{What: plan.SpireClusterRole, Name: name, Action: plan.Delete, Cluster: cluster})
	}
	if rbac.Binding != "missing" && rbac.Binding != kube.RBACForeign {
		out = append(out, plan.SpireChange{What: plan.SpireRoleBinding, Name: name, Action: plan.Delete, Cluster: cluster})
	}
	return out, nil
}

// otherDeployments says whether another deployment has files of cluster on the spire node.
func (l *Lane) otherDeployments(ctx context.Context, cluster string) (bool, error) {
	out, err := l.Node.Run(ctx, fmt.Sprintf(`d=%s/k8s_psat.d/%s
g=%s
for f in "$d"/*.kubeconfig; do [ -f "$f" ] && [ "${f##*/}" != "$g.kubeconfig" ] && echo other; done
exit 0
`, shq(l.Spire.ConfigDir), shq(cluster), shq(l.Group)))
	if err != nil {
		return false, fmt.Errorf("spire node %s: read k8s_psat.d: %w", l.Spire.SSH, err)
	}
	return strings.Contains(out, "other"), nil
}

// apiServer is the API server's address for the spire node, and its CA.
func (l *Lane) apiServer() (string, []byte, error) {
	host, ca, err := l.Kube.APIServer()
	if err != nil {
		return "", nil, fmt.Errorf("spire: %w", err)
	}
	if l.APIServer != "" {
		host = l.APIServer
	}
	return host, ca, nil
}

// agentPods are plan's notes on the agent pods: when the cluster has fewer kube nodes than
// agent pods (one agent per kube node: k8s_psat keys the agent ID by the kube node, so the
// pods beyond stay Pending), and the pods that carry the agent label but are not slipway's
// (their namespace is not slipway's): the anti-affinity ignores them.
func (l *Lane) agentPods(ctx context.Context) ([]string, error) {
	nodes, err := l.Kube.SchedulableNodes(ctx)
	if err != nil {
		return nil, fmt.Errorf("spire: %w", err)
	}
	pods, err := l.Kube.SpireAgentPods(ctx, l.Namespace)
	if err != nil {
		return nil, fmt.Errorf("spire: %w", err)
	}
	var notes []string
	if want := len(l.Nodes) + pods.Others; nodes < want {
		notes = append(notes, fmt.Sprintf("spire: the cluster has %d schedulable kube node(s) for %d SPIRE agent pod(s) (%d of this group, %d of others): no two agents share a kube node (k8s_psat gives one identity per kube node), so %d pod(s) will stay Pending",
			nodes, want, len(l.Nodes), pods.Others, want-nodes))
	}
	if len(pods.Foreign) > 0 {
		notes = append(notes, fmt.Sprintf("spire: pod(s) %s carry the label %s=true but are not slipway's (their namespace has no %s=%s): slipway's agent pods do not avoid them, and they do not keep slipway's off a kube node",
			strings.Join(pods.Foreign, ", "), spec.LabelSpireAgent, spec.LabelManagedBy, spec.ManagedBy))
	}
	return notes, nil
}

func rbacChanges(cluster, ns, deployment string, st kube.RBACState) []plan.SpireChange {
	name := kube.SpireRBACName(deployment)
	var out []plan.SpireChange
	for _, x := range []struct {
		what  plan.SpireWhat
		state string
	}{{plan.SpireClusterRole, st.Role}, {plan.SpireRoleBinding, st.Binding}} {
		switch x.state {
		case "":
		case "missing":
			out = append(out, plan.SpireChange{What: x.what, Name: name, Action: plan.Create, Cluster: cluster,
				Reason: "tokenreviews create; pods and nodes get, for " + ns + ":" + spec.SpireServerAccount})
		default:
			out = append(out, plan.SpireChange{What: x.what, Name: name, Action: plan.Update, Cluster: cluster, Reason: x.state})
		}
	}
	return out
}
