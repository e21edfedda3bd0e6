package render

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"slipway.dev/slipway/internal/secretsconf"
	"slipway.dev/slipway/internal/spec"
)

// Names and sizes of the secrets sidecar's pod parts (FR-004e, FR-004g).
const (
	ContainerSecrets   = "secrets"   // the native sidecar
	ContainerCompanion = "companion" // the companion container
	volumeSecrets      = "secrets"
	volumeNodeToken    = "node-token"
	volumeCompanion    = "companion"
	volumeCompanionTmp = "companion-tmp"
	CompanionStateDir  = "/var/lib/companion"
	// SecretsVolumeSize bounds the memory volume of the files: it counts against the pod's
	// memory.
	SecretsVolumeSize = "16Mi"
	// nodeTokenSeconds is the life of the projected token the sidecar logs in with; the
	// kubelet renews it at 80% of that.
	nodeTokenSeconds = 600
	nonRootUID       = 65532
)

// serviceContainer is a role's service image, locked down (FR-004d), with the role's own env
// beside its service's environment; the second result is the hash of the config it uses.
func (r *renderer) serviceContainer(ps *corev1.PodSpec, n *spec.Node, role *spec.Role) (corev1.Container, string) {
	yes, no := true, false
	seccomp := func() *corev1.SeccompProfile {
		return &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	}
	ps.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: &yes, SeccompProfile: seccomp()}
	// A read-only root file system still needs a scratch /tmp.
	ps.Volumes = []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	literal := maps.Clone(role.Service.Environment)
	if literal == nil {
		literal = map[string]string{}
	}
	maps.Copy(literal, role.Env) // the loader refuses a name in both
	c := corev1.Container{
		Name:    ContainerService,
		Image:   r.in.Images[spec.RoleObjectName(n.Name, role.Name)],
		Command: slices.Clone(role.Service.Image.Command),
		Env:     env("", n.Name, role.Name, literal),
		SecurityContext: &corev1.SecurityContext{
			RunAsNonRoot:             &yes,
			AllowPrivilegeEscalation: &no,
			ReadOnlyRootFilesystem:   &yes,
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile:           seccomp(),
		},
		VolumeMounts: []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}},
	}
	return c, r.podConfig(ps, &c, &role.PodInputs)
}

// secretsPod adds to a service role's pod its secrets sidecar and memory volume (the service
// mounts it read-only) and its companion (FR-004e, FR-004g). The sidecar alone mounts the
// node's projected token; the process namespace is shared, and the sidecar alone holds
// CAP_KILL, only when a secret stops the service on a change.
func (r *renderer) secretsPod(ps *corev1.PodSpec, svc *corev1.Container, n *spec.Node, role *spec.Role) {
	mount := corev1.VolumeMount{Name: volumeSecrets, MountPath: spec.SecretsDir, ReadOnly: true}
	if len(role.SidecarSecrets) > 0 {
		size := resource.MustParse(SecretsVolumeSize)
		ps.Volumes = append(ps.Volumes,
			corev1.Volume{Name: volumeSecrets, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: &size}}},
			r.tokenVolume(n))
		ps.InitContainers = append(ps.InitContainers, r.secretsSidecar(n, role))
		svc.VolumeMounts = append(svc.VolumeMounts, mount)
		if role.NeedsRestart() {
			yes := true
			ps.ShareProcessNamespace = &yes
		}
	}
	if role.Companion {
		c := corev1.Container{
			Name:            ContainerCompanion,
			Image:           svc.Image,
			Command:         []string{spec.CompanionCommand},
			Env:             slices.Clone(svc.Env),
			SecurityContext: svc.SecurityContext.DeepCopy(),
			VolumeMounts: []corev1.VolumeMount{
				{Name: volumeCompanion, MountPath: CompanionStateDir},
				{Name: volumeCompanionTmp, MountPath: "/tmp"},
			},
		}
		if len(role.SidecarSecrets) > 0 {
			c.VolumeMounts = append([]corev1.VolumeMount{mount}, c.VolumeMounts...)
		}
		ps.Volumes = append(ps.Volumes,
			corev1.Volume{Name: volumeCompanion, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			corev1.Volume{Name: volumeCompanionTmp, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		ps.Containers = append(ps.Containers, c)
	}
}

// tokenVolume is the node's identity for the secrets server: a short-lived token of its
// ServiceAccount for the server's audience, renewed by the kubelet.
func (r *renderer) tokenVolume(n *spec.Node) corev1.Volume {
	secs := int64(nodeTokenSeconds)
	return corev1.Volume{Name: volumeNodeToken, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{
			Audience: n.SecretsFrom.Audience, ExpirationSeconds: &secs, Path: "token"}}},
	}}}
}

// secretsSidecar is the native sidecar (an init container that keeps running): its startup
// probe passes once every file exists, so the service starts only then.
func (r *renderer) secretsSidecar(n *spec.Node, role *spec.Role) corev1.Container {
	always := corev1.ContainerRestartPolicyAlways
	yes, no := true, false
	sc := &corev1.SecurityContext{
		AllowPrivilegeEscalation: &no,
		ReadOnlyRootFilesystem:   &yes,
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	if role.NeedsRestart() {
		// A process that is not root cannot hold CAP_KILL on Kubernetes (no ambient
		// capabilities): the sidecar is root of the pod's user namespace (hostUsers: false),
		// with KILL alone.
		root := int64(0)
		sc.RunAsUser, sc.RunAsNonRoot = &root, &no
		sc.Capabilities.Add = []corev1.Capability{"KILL"}
	} else {
		uid := int64(nonRootUID)
		sc.RunAsUser, sc.RunAsNonRoot = &uid, &yes
	}
	return corev1.Container{
		Name:          ContainerSecrets,
		Image:         r.in.Images[spec.SecretsImageName(n.Name, role.Name)],
		Command:       []string{secretsconf.Binary, "run"},
		Env:           []corev1.EnvVar{{Name: secretsconf.Env, Value: sidecarConfig(r.in.Group, n, role).Encode()}},
		RestartPolicy: &always,
		// The sidecar's last log lines (the server's refusal, never a value) become the
		// container's termination message, so a failed rollout says why (issue 36).
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		StartupProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{secretsconf.Binary, "check"}}},
			PeriodSeconds: 1, FailureThreshold: 600,
		},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
		},
		SecurityContext: sc,
		VolumeMounts: []corev1.VolumeMount{
			{Name: volumeSecrets, MountPath: spec.SecretsDir},
			{Name: volumeNodeToken, MountPath: secretsconf.TokenDir, ReadOnly: true},
		},
	}
}

// sidecarConfig is what the sidecar does: paths and keys, never a value; it logs in as the
// deployment's role (spec.Group.SecretsRole).
func sidecarConfig(g *spec.Group, n *spec.Node, role *spec.Role) *secretsconf.Config {
	s := n.SecretsFrom
	cfg := &secretsconf.Config{
		Address: s.Address, CAPEM: s.CAPEM, CAFetchURL: s.CAFetchURL, CASHA256: s.CASHA256, AuthMount: s.AuthMount, Role: g.SecretsRole(n.Name, s),
		TokenFile: secretsconf.TokenFile, Dir: spec.SecretsDir, PollSeconds: int(s.Poll.Seconds()),
	}
	if role.NeedsRestart() {
		cfg.ServiceContainer = ContainerService
	}
	for _, f := range role.SidecarSecrets {
		file := secretsconf.File{Name: f.File, Mount: f.Mount, Path: f.Path, Key: f.Key,
			Template: f.Template, Encoding: f.Encoding, Variable: f.Variable, Restart: f.Restart}
		// A login's static credentials, a KV entry and a key pair of central: live under the
		// deployment's names (issue 44).
		if c := g.Central; c != nil && f.Login != "" {
			file.Engine, file.Mount, file.Path = secretsconf.EngineDatabase, c.DatabaseMount, spec.CentralName(g.Name, f.Login)
		} else if c != nil && f.Entry != "" {
			file.Mount, file.Path = c.KVMount, spec.CentralKVPath(g.Name, f.Entry)
		} else if c != nil && f.S3KeyPair != "" {
			file.Mount, file.Path = c.KVMount, spec.CentralKeyPairPath(g.Name, f.S3KeyPair)
		}
		cfg.Files = append(cfg.Files, file)
	}
	return cfg
}
