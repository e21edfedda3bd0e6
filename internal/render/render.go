// Package render turns a validated group (internal/spec) into the Kubernetes objects of SPEC
// §5, as typed k8s.io/api objects in apply order, and writes them as a YAML stream or as the
// kustomize package of SPEC §9.
//
// It is pure: the same Input gives the same objects and the same bytes, and it reads no
// cluster, registry or state. It assumes the group passed spec's validation (names are DNS
// labels, derived names fit and are unique, ports are served), and that the caller resolved
// every image to a digest and every machine ID beforehand.
package render

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"slipway.dev/slipway/internal/spec"
)

// Names inside a pod.
const (
	ContainerNode    = "node"    // the container of a node's image (main and role pods)
	ContainerService = "service" // the container of a role's service image
	EnvMachineID     = "container_uuid"
	EnvNode          = "SLIPWAY_NODE"
	EnvRole          = "SLIPWAY_ROLE"
	StateMountPath   = "/var/lib"
	// RoleArgPrefix is the argument a role pod's PID 1 gets: slipway.role=<role> (FR-004a).
	RoleArgPrefix = "slipway.role="
)

// Object is a typed Kubernetes object with its TypeMeta set (what controller-runtime calls
// client.Object).
type Object interface {
	metav1.Object
	runtime.Object
}

// Input is everything render needs besides the group.
type Input struct {
	Group *spec.Group
	// Namespace of the objects; "" means the group file's namespace, else the group's name.
	Namespace string
	// Images maps a node name, or "<node>-<role>" for a service role, to the full image
	// reference pinned by digest: "<registry>/<ns>/<node>@sha256:…".
	Images map[string]string
	// MachineIDs maps a node name to its machine ID. Role pods need none: each gets its pod's
	// UID (FR-013, SC-005a), so that no two replicas share an identity.
	MachineIDs map[string]string
	// StopSignal sets SIGRTMIN+3 as the stop signal of systemd containers. It needs the
	// ContainerStopSignals feature gate of the cluster, so it is off unless the caller knows.
	StopSignal bool
	// ServiceMonitors makes the ServiceMonitors roles ask for. The kind is a CRD of the
	// Prometheus Operator, so it is off unless the caller knows the cluster has it.
	ServiceMonitors bool
	// StateVersions maps a node to its state version (SPEC §6a) when it has one: the file's,
	// else its image's label. nil takes the file's.
	StateVersions map[string]string
	// SecretKey is the group's secret key (spec.KeyedHash), from the state: the hashes of the
	// Secrets' values are keyed with it. A group with secrets: needs one.
	SecretKey []byte
	// Spire is what the plan read for a group with `spire:` (FR-016); nil renders an empty
	// cluster name and bundle (render without a cluster).
	Spire *Spire
}

// Objects returns the objects of SPEC §5 in apply order: Namespace, NetworkPolicies
// (default-deny first), ServiceAccounts, PersistentVolumeClaims, ConfigMaps and Secrets,
// Services, the routes of nodes behind the Gateway (TLSRoute, HTTPRoute), Deployments,
// PodDisruptionBudgets, ServiceMonitors.
// Within a kind, objects follow the nodes by name, a node before its roles by name. Each
// carries its applied hash (StampApplied).
func Objects(in Input) ([]Object, error) {
	g := in.Group
	if g == nil {
		return nil, errors.New("render: no group")
	}
	r := &renderer{in: in, ns: in.Namespace}
	if r.ns == "" {
		r.ns = g.Namespace
	}
	if r.ns == "" {
		r.ns = g.Name
	}
	if !spec.IsDNSLabel(r.ns) {
		return nil, fmt.Errorf("render group %s: namespace %q is not a DNS label", g.Name, r.ns)
	}
	if err := r.checkInputs(); err != nil {
		return nil, err
	}

	var policies, accounts, claims, configs, services, routes, deployments, budgets, monitors []Object
	policies = append(policies, r.defaultDeny())
	accounts, configs = r.spireObjects()
	for _, n := range g.Nodes {
		policies = append(policies, r.nodePolicy(n))
		accounts = append(accounts, r.serviceAccount(n))
		claims = append(claims, r.claim(n))
		configs = append(configs, r.configObjects(n)...)
		if ports := n.Firewall.LoadBalancerPorts(); g.AddressModeOf(n) == spec.BehindGateway {
			services = append(services, r.gatewayService(n, ports))
			routes = append(routes, r.routes(n)...)
		} else if len(ports) > 0 {
			services = append(services, r.nodeService(n, ports))
		}
		d, err := r.nodeDeployment(n)
		if err != nil {
			return nil, fmt.Errorf("render group %s: node %s: %w", g.Name, n.Name, err)
		}
		deployments = append(deployments, d)
		for _, role := range n.Roles {
			// A role without ports still gets its policy when it must carry the node's egress.
			if len(role.Ports) > 0 || n.Firewall.Egress != nil {
				policies = append(policies, r.rolePolicy(n, role))
			}
			if len(role.Ports) > 0 {
				services = append(services, r.roleService(n, role))
			}
			if role.Metrics != nil {
				policies = append(policies, r.metricsPolicy(n, role))
				services = append(services, r.metricsService(n, role))
			}
			deployments = append(deployments, r.roleDeployment(n, role))
		}
		budgets = append(budgets, r.budgets(n)...)
		monitors = append(monitors, r.serviceMonitors(n)...)
	}
	out := make([]Object, 0, 1+len(policies)+len(accounts)+len(claims)+len(configs)+len(services)+len(routes)+len(deployments)+len(budgets)+len(monitors))
	out = append(out, r.namespace())
	for _, list := range [][]Object{policies, accounts, claims, configs, services, routes, deployments, budgets, monitors} {
		out = append(out, list...)
	}
	if err := stampAll(out); err != nil {
		return nil, fmt.Errorf("render group %s: %w", g.Name, err)
	}
	return out, nil
}

type renderer struct {
	in Input
	ns string
}

// checkInputs reports every node or role that lacks its image or machine ID.
func (r *renderer) checkInputs() error {
	var errs []error
	need := func(what, key, owner string, m map[string]string) {
		v, ok := m[key]
		switch {
		case !ok || v == "":
			errs = append(errs, fmt.Errorf("%s: no %s (key %q)", owner, what, key))
		case what == "image" && !strings.Contains(v, "@sha256:"):
			errs = append(errs, fmt.Errorf("%s: image %s is not pinned by digest", owner, v))
		}
	}
	for _, n := range r.in.Group.Nodes {
		owner := "node " + n.Name
		need("image", n.Name, owner, r.in.Images)
		need("machine ID", n.Name, owner, r.in.MachineIDs)
		for _, role := range n.Roles {
			owner := fmt.Sprintf("role %s of node %s", role.Name, n.Name)
			if role.Service != nil {
				need("image", spec.RoleObjectName(n.Name, role.Name), owner, r.in.Images)
			}
			if len(role.SidecarSecrets) > 0 {
				need("image", spec.SecretsImageName(n.Name, role.Name), owner, r.in.Images)
			}
		}
	}
	if len(r.in.SecretKey) == 0 && r.in.Group.HasOwnSecrets() {
		errs = append(errs, errors.New("no secret key to hash the values of its secrets with"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("render group %s: %w", r.in.Group.Name, errors.Join(errs...))
	}
	return nil
}

// labels are the labels of every object; extra adds to a copy.
func (r *renderer) labels(extra ...string) map[string]string {
	l := map[string]string{spec.LabelManagedBy: spec.ManagedBy, spec.LabelGroup: r.in.Group.Name}
	for i := 0; i+1 < len(extra); i += 2 {
		l[extra[i]] = extra[i+1]
	}
	return l
}

// podsOf selects the pods slipway runs as name for this deployment: their name label and the
// deployment's group label (spec.Identity), which every pod slipway makes carries. The name
// alone takes any pod labelled app.kubernetes.io/name=<name> in the namespace, as every Helm
// chart labels its own (issue 46 item 5). Services', NetworkPolicies' and budgets' selectors
// are mutable, so an existing object takes it in place, no pod restarted; a Deployment's
// selector is not and stays the name (its ReplicaSets add the pod-template hash).
func (r *renderer) podsOf(name string) map[string]string {
	return map[string]string{spec.LabelName: name, spec.LabelGroup: r.in.Group.Name}
}

func (r *renderer) meta(name string, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: r.ns, Labels: labels}
}

func (r *renderer) namespace() *corev1.Namespace {
	return &corev1.Namespace{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: r.ns, Labels: r.labels()},
	}
}

func (r *renderer) serviceAccount(n *spec.Node) *corev1.ServiceAccount {
	no := false
	return &corev1.ServiceAccount{
		TypeMeta:                     metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta:                   r.meta(spec.ServiceAccountName(n.Name), r.labels(spec.LabelNode, n.Name)),
		AutomountServiceAccountToken: &no,
	}
}

// claim is the node's state (FR-012); nothing here changes when the pod is replaced.
func (r *renderer) claim(n *spec.Node) *corev1.PersistentVolumeClaim {
	pvc := &corev1.PersistentVolumeClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: r.meta(spec.ClaimName(n.Name), r.labels(spec.LabelNode, n.Name)),
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: n.State.Size},
			},
		},
	}
	if n.State.StorageClass != "" {
		sc := n.State.StorageClass
		pvc.Spec.StorageClassName = &sc
	}
	return pvc
}

// machineIDEnv is container_uuid: the node's machine ID from the state for its main pod; for a
// role pod, the pod's UID through the downward API. A role pod is one of several replicas that
// come and go: it needs its own identity (SC-005a), not a stable one, and the UID differs
// per pod and stays the same across restarts of the pod's containers.
func machineIDEnv(machineID string) corev1.EnvVar {
	if machineID == "" {
		return corev1.EnvVar{Name: EnvMachineID, ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.uid"}}}
	}
	return corev1.EnvVar{Name: EnvMachineID, Value: machineID}
}

// env is the environment of a node or role container; machineID "" is a role pod's.
func env(machineID, node, role string, extra map[string]string) []corev1.EnvVar {
	out := []corev1.EnvVar{machineIDEnv(machineID), {Name: EnvNode, Value: node}}
	if role != "" {
		out = append(out, corev1.EnvVar{Name: EnvRole, Value: role})
	}
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		out = append(out, corev1.EnvVar{Name: k, Value: extra[k]})
	}
	return out
}

func probe(p *spec.Probe) *corev1.Probe {
	pr := &corev1.Probe{PeriodSeconds: 5, TimeoutSeconds: 5}
	switch {
	case p.Exec != nil:
		pr.Exec = &corev1.ExecAction{Command: slices.Clone(p.Exec)}
	case p.HTTP != nil:
		pr.HTTPGet = &corev1.HTTPGetAction{Path: p.HTTP.Path, Port: intstr.FromInt32(p.HTTP.Port)}
	default:
		pr.TCPSocket = &corev1.TCPSocketAction{Port: intstr.FromInt32(p.TCP)}
	}
	return pr
}

// podSpec is what every pod of a node shares (FR-004): its account, its own user namespace,
// the RuntimeClass, the node's host name. Service links are off: a machine-like node reads
// its peers from DNS, and a pod's environment should not change with the namespace's Services.
func (r *renderer) podSpec(n *spec.Node) corev1.PodSpec {
	no := false
	ps := corev1.PodSpec{
		ServiceAccountName:           spec.ServiceAccountName(n.Name),
		AutomountServiceAccountToken: &no,
		HostUsers:                    &no,
		EnableServiceLinks:           &no,
		Hostname:                     n.Name,
	}
	if rc := r.in.Group.RuntimeClassName; rc != "" {
		ps.RuntimeClassName = &rc
	}
	return ps
}

// nodeContainer is a container of the node's image, with the settings of its init (SPEC §5)
// and the env and files of in (the node's, or a role's). The second result is the hash of the
// config the container uses (podConfig).
func (r *renderer) nodeContainer(ps *corev1.PodSpec, n *spec.Node, in *spec.PodInputs, machineID, role string) (corev1.Container, string) {
	c := corev1.Container{
		Name:      ContainerNode,
		Image:     r.in.Images[n.Name],
		Command:   slices.Clone(n.Image.Command),
		Env:       env(machineID, n.Name, role, in.Env),
		Resources: *n.Resources.DeepCopy(),
	}
	if role != "" {
		c.Args = []string{RoleArgPrefix + role}
	}
	readiness := n.Readiness
	if n.Init == spec.InitSystemd {
		if readiness == nil {
			readiness = systemdReady
		}
		r.systemdPod(ps, &c)
	}
	if readiness != nil {
		c.ReadinessProbe = probe(readiness)
	}
	return c, r.podConfig(ps, &c, in)
}

// DeploymentTypeMeta is the TypeMeta of every Deployment slipway applies, rendered or rolled
// back (the engine's rollback writes one too).
var DeploymentTypeMeta = metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}

func (r *renderer) deployment(name string, labels map[string]string, replicas int32, ps corev1.PodSpec) *appsv1.Deployment {
	podLabels := maps.Clone(labels)
	podLabels[spec.LabelName] = name
	return &appsv1.Deployment{
		TypeMeta:   DeploymentTypeMeta,
		ObjectMeta: r.meta(name, podLabels),
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{spec.LabelName: name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(podLabels)},
				Spec:       ps,
			},
		},
	}
}

// nodeDeployment runs the node's one pod: never two at a time (Recreate), its state claim on
// /var/lib, its machine ID in container_uuid (FR-004, FR-012, FR-013).
func (r *renderer) nodeDeployment(n *spec.Node) (*appsv1.Deployment, error) {
	ps := r.podSpec(n)
	c, hash := r.nodeContainer(&ps, n, &n.PodInputs, r.in.MachineIDs[n.Name], "")
	ps.Volumes = append([]corev1.Volume{{Name: "state", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: spec.ClaimName(n.Name)}}}}, ps.Volumes...)
	c.VolumeMounts = append([]corev1.VolumeMount{{Name: "state", MountPath: StateMountPath}}, c.VolumeMounts...)
	ps.Containers = []corev1.Container{c}
	if v := r.stateVersion(n); v != "" {
		ps.InitContainers = []corev1.Container{StateInitContainer(c.Image, v)}
	}
	d := r.deployment(n.Name, r.labels(spec.LabelNode, n.Name), 1, ps)
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	workload(d, n, n.Workload)
	r.spirePod(d, n)
	setConfigHash(&d.Spec.Template, hash)
	if r.in.Group.Spire != nil {
		if err := spirePodLabel(&d.Spec.Template); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// roleDeployment runs a role: the node's image with slipway.role=<role> (FR-004a), or the
// role's service image, locked down (FR-004d). Role pods have no state claim: it is the main
// pod's, and ReadWriteOnce.
func (r *renderer) roleDeployment(n *spec.Node, role *spec.Role) *appsv1.Deployment {
	name := spec.RoleObjectName(n.Name, role.Name)
	ps := r.podSpec(n)
	var c corev1.Container
	hash := ""
	if role.Service == nil {
		c, hash = r.nodeContainer(&ps, n, &role.PodInputs, "", role.Name)
	} else {
		c, hash = r.serviceContainer(&ps, n, role)
	}
	ps.Containers = []corev1.Container{c}
	if role.Service != nil {
		r.secretsPod(&ps, &ps.Containers[0], n, role)
	}
	d := r.deployment(name, r.labels(spec.LabelNode, n.Name, spec.LabelRole, role.Name), role.Replicas, ps)
	if role.Companion {
		// Kubernetes counts a pod whose companion is down unavailable, and a rolling update
		// keeps the old pods until the new ones are available: a failing companion would hold
		// the rollout forever. Recreate replaces the pods whatever their companions do.
		d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	}
	workload(d, n, role.Workload)
	setConfigHash(&d.Spec.Template, hash)
	return d
}
