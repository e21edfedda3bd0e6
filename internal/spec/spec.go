// Package spec is the group file of SPEC §3 as data: it loads a slipway.yaml strictly (an
// unknown field, a wrong type or a duplicate key is an error with its file:line and field
// path), merges each node with the file's `defaults:`, and validates every rule of §3,
// reporting all errors at once as Errors.
//
// Defaults: a node takes each field it lacks from `defaults:`; env, state, firewall and
// resources (requests, limits) merge key by key, every other field (image, readiness, roles,
// lists) is taken whole. A problem of a default value is reported once, at `defaults.…`; a rule
// across fields (a published port not served) is checked per node, at the node's path and the
// line where the value was written.
//
// It is pure apart from reading the file and checking that the image paths it names exist:
// it talks to no cluster and no registry. A *Group it returns is valid and complete (defaults
// applied, image paths absolute), so later stages (render, plan) need not check it again.
package spec

import (
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Init values of a node.
const (
	InitSystemd = "systemd"
	InitNone    = "none"
)

// Protocols of a Port.
const (
	TCP = "TCP"
	UDP = "UDP"
)

// Defaults the file does not have to state.
const (
	DefaultRolloutTimeout = 5 * time.Minute
	DefaultInitCommand    = "/sbin/init"
	DefaultStateSize      = "1Gi"
	DefaultRoleReplicas   = 1
)

// Group is a loaded, defaulted and validated group file.
type Group struct {
	Name      string
	Namespace string // as written; "" when the file has none (SPEC §2 precedence applies)
	// SharedNamespace: the namespace may hold other deployments' objects (sharedNamespace:
	// true); else plan refuses one that does, as a namespace belongs to one deployment.
	SharedNamespace  bool
	RuntimeClassName string
	RuntimeClassLine int     // the line of runtimeClassName in File; 0 when unknown
	Nodes            []*Node // sorted by name
	// Publish is the `publish:` section; nil: the group is not in the operator form (SPEC §7).
	Publish *Publish
	// Spire is the `spire:` section; nil: no node gets a SPIRE identity (FR-015).
	Spire *Spire
	// Central is the `central:` section: the deployment's databases, logins and KV entries
	// (issue 44); nil: none.
	Central *Central
	File    string // the file name as given to Load or Parse
	// Whole is the group a per-app target was taken from (ForTarget); nil for a group itself.
	Whole *Group
	// Identity is the deployment ForDeployment made the group for; Name is its Key. Zero for
	// the group as loaded (Ident gives its identity then).
	Identity Identity
	Dir      string // absolute directory relative image paths were resolved against
}

// Node returns the node called name, or nil.
//
// Nodes are sorted by name, so a node is found by binary search (the engine asks once or
// more per node: a scan each time grew with the square of the group, issue 17); a group put
// together unsorted, as tests do, is scanned when the search misses.
func (g *Group) Node(name string) *Node {
	if i, ok := slices.BinarySearchFunc(g.Nodes, name, func(n *Node, name string) int { return strings.Compare(n.Name, name) }); ok {
		return g.Nodes[i]
	}
	for _, n := range g.Nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}

// Node is one machine-like node of the group, with the file's defaults merged in.
type Node struct {
	Name           string
	App            string // the per-app target the node belongs to (FR-007); "": none
	Image          Image
	Init           string // InitSystemd or InitNone
	Readiness      *Probe // nil: the default of Init (SPEC §5)
	PodInputs             // env, files, and the ConfigMaps and Secrets <node>-<name> it makes
	Resources      corev1.ResourceRequirements
	RolloutTimeout time.Duration
	State          StateVolume
	Firewall       Firewall
	PublishedNames []string
	Roles          []*Role // sorted by name
	Workload               // labels, annotations, placement, disruption, probes (SPEC §3a)
	// ServiceAnnotations go on the Service <node> (load-balancer address pinning and the like).
	ServiceAnnotations map[string]string
	StopGracePeriod    time.Duration      // terminationGracePeriodSeconds; 0: Kubernetes' default
	PreStopSleep       time.Duration      // a preStop sleep before the stop signal; 0: none
	TmpSize            *resource.Quantity // sizeLimit of the memory-backed /run and /tmp; nil: none
	// SecretsFrom is the server its roles' secrets sidecars read from; nil: none.
	SecretsFrom *SecretsServer
}

// Role returns the role called name, or nil.
func (n *Node) Role(name string) *Role {
	for _, r := range n.Roles {
		if r.Name == name {
			return r
		}
	}
	return nil
}

// Image is where a node's (or a service role's) image comes from: exactly one of Rootfs,
// Archive and Base is set. Paths are absolute.
type Image struct {
	Rootfs  string    // a directory: the image has it as its one layer
	Archive string    // a docker-archive or OCI-layout tarball, pushed as it is
	Base    string    // an image reference, plus the Add files as one more layer
	Add     []AddFile // only with Base
	Command []string  // empty: the image's own; /sbin/init for Rootfs unless set
	// User is the image config's User (`uid`, `uid:gid`, `name`, `name:group`); empty: the
	// image's own, none for Rootfs.
	User string
}

// RegistryPrefix starts a base image in the registry slipway pushes to (--registry or
// K8S_REGISTRY), whatever its address where slipway runs: a base image the operator built and
// pushed there, such as the dev cluster's registry on its loopback port.
const RegistryPrefix = "${K8S_REGISTRY}/"

// BaseIn is the base image reference with RegistryPrefix replaced by registry.
func (img Image) BaseIn(registry string) string {
	if rest, own := strings.CutPrefix(img.Base, RegistryPrefix); own && registry != "" {
		return strings.TrimSuffix(registry, "/") + "/" + rest
	}
	return img.Base
}

// AddFile is one file (or directory tree) added on top of a base image.
type AddFile struct {
	Src string // absolute path on the build machine
	Dst string // absolute path in the image
}

// Probe is a readiness probe: exactly one of Exec, HTTP and TCP is set.
type Probe struct {
	Exec []string
	HTTP *HTTPProbe
	TCP  int32 // a TCP port; 0 when unset
}

// HTTPProbe is an HTTP GET readiness check.
type HTTPProbe struct {
	Port int32
	Path string // starts with "/"
}

// StateVolume is the claim `<node>-state` mounted on /var/lib.
type StateVolume struct {
	Size         resource.Quantity
	StorageClass string // "": the cluster's default class
	// Version is the layout version of the data on /var/lib (SPEC §6a); "" takes the image's
	// label LabelStateVersion. A change is a migration: the data is copied first.
	Version string
	// Protect makes plan fail for any change that deletes the claim: the node removed, the
	// claim replaced, destroy (SPEC §6a).
	Protect bool
}

// Firewall is the node's firewall description; NetworkPolicies and the Service derive from it.
type Firewall struct {
	Served, Published, Admin, Operator             []Port
	InternalSources, AdminSources, OperatorSources []string // canonical CIDRs
	// FromNamespaces admits pods of other namespaces on some ports, each port reaching the
	// policy (node, role or metrics) that has it.
	FromNamespaces []Peer
	// Egress is nil when egress is open; otherwise (even empty) the pods reach the cluster's
	// resolver, the group's own pods and these, nothing else.
	Egress []Peer
}

// Peer is a source or destination of the firewall beyond the namespace: pods of the namespaces
// whose labels match Namespace (and, when set, whose own labels match Pods), or for egress a
// CIDR instead.
type Peer struct {
	CIDR      string            // egress only; exactly one of CIDR and Namespace is set
	Namespace map[string]string // labels of the namespaces; at least one
	Pods      map[string]string // labels of the pods in them; nil: every pod
	Ports     []Port            // at least one
}

// LoadBalancerPorts are the ports of the Service `<node>`: published, admin and operator ports,
// each once, in that order. Empty means the node gets no Service (SPEC §5, FR-018).
func (f Firewall) LoadBalancerPorts() []Port {
	var out []Port
	seen := map[Port]bool{}
	for _, list := range [][]Port{f.Published, f.Admin, f.Operator} {
		for _, p := range list {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out
}

// Role is a Deployment `<node>-<role>` beside the node's main one.
type Role struct {
	Name     string
	Replicas int32
	Ports    []Port
	Metrics  *Port // nil: no metrics Service
	// ServiceMonitor asks for a Prometheus Operator ServiceMonitor of the metrics Service,
	// made where the cluster has its CRD.
	ServiceMonitor bool
	Service        *Service // nil: the role runs the node's image with `slipway.role=<role>`
	// Workload is the role's own, or else the node's (a service role takes only its own
	// probes: the node's check the node's image). Disruption nil: DefaultDisruption.
	Workload
	// PodInputs: the role's own env (else the node's; a service role takes only its own), the
	// node's files (roles without service), and the ConfigMaps and Secrets
	// <node>-<role>-<name> the role makes; its references also name the node's (SPEC §3a).
	PodInputs
	// SidecarSecrets are the files a service role's secrets sidecar writes (FR-004e), sorted
	// by file; Companion adds the companion container (FR-004g).
	SidecarSecrets []SidecarSecret
	Companion      bool
}

// Service is the separate image a role runs instead of the node's image (FR-004d).
type Service struct {
	Image       Image
	Environment map[string]string
}

// Port is a protocol and a port number; the file writes it `80`, `tcp/80` or `udp/53`.
type Port struct {
	Protocol string // TCP or UDP
	Number   int32
}

// String writes the port as the file would: `80` for TCP, `udp/53` for UDP.
func (p Port) String() string {
	if p.Protocol == TCP {
		return itoa(p.Number)
	}
	return strings.ToLower(p.Protocol) + "/" + itoa(p.Number)
}

// Name is the port's name in a Service: `<protocol>-<port>`, lowercase (SPEC §5).
func (p Port) Name() string { return strings.ToLower(p.Protocol) + "-" + itoa(p.Number) }

func itoa(n int32) string { return strconv.FormatInt(int64(n), 10) }
