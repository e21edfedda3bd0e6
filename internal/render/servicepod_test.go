package render_test

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// TestSidecarRules: the rules of FR-004e and FR-004g the golden file could hide: the memory
// volume is writable only in the sidecar, the node's token is mounted only there, the process
// namespace is shared and CAP_KILL held (by the sidecar alone) only with a restart secret, and
// the companion has no probe.
func TestSidecarRules(t *testing.T) {
	objs := load(t, "testdata/workload/sidecar.yaml")
	tests := []struct {
		deployment        string
		sidecar, restart  bool
		companion         bool
		sidecarRunsAsRoot bool
	}{
		{"web-sso", true, true, true, true},
		{"web-api", true, false, false, false},
		{"web-jobs", false, false, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.deployment, func(t *testing.T) {
			d, ok := find[*appsv1.Deployment](objs, "Deployment", tt.deployment)
			if !ok {
				t.Fatal("no deployment")
			}
			ps := d.Spec.Template.Spec
			if got := ps.ShareProcessNamespace != nil && *ps.ShareProcessNamespace; got != tt.restart {
				t.Errorf("shareProcessNamespace %v, want %v", got, tt.restart)
			}
			if got := len(ps.InitContainers) == 1; got != tt.sidecar {
				t.Fatalf("sidecar %v, want %v", got, tt.sidecar)
			}
			all := append(append([]corev1.Container{}, ps.InitContainers...), ps.Containers...)
			for _, c := range all {
				isSidecar := c.Name == "secrets"
				for _, m := range c.VolumeMounts {
					if m.Name == "secrets" && m.ReadOnly == isSidecar {
						t.Errorf("container %s mounts the secrets volume read-only=%v", c.Name, m.ReadOnly)
					}
					if m.Name == "node-token" && !isSidecar {
						t.Errorf("container %s mounts the node's token", c.Name)
					}
				}
				caps := c.SecurityContext.Capabilities
				if len(caps.Add) > 0 && !(isSidecar && tt.restart && len(caps.Add) == 1 && caps.Add[0] == "KILL") {
					t.Errorf("container %s adds capabilities %v", c.Name, caps.Add)
				}
				if isSidecar {
					root := *c.SecurityContext.RunAsUser == 0
					if root != tt.sidecarRunsAsRoot || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways ||
						strings.Join(c.StartupProbe.Exec.Command, " ") != "/slipway-secrets check" {
						t.Errorf("sidecar: root %v, restart policy %v, startup probe %v", root, *c.RestartPolicy, c.StartupProbe)
					}
				}
				if c.Name == "companion" && (c.ReadinessProbe != nil || c.LivenessProbe != nil || c.StartupProbe != nil || c.Command[0] != "/bin/companion") {
					t.Errorf("companion %+v", c)
				}
			}
			hasCompanion := len(ps.Containers) == 2 && ps.Containers[1].Name == "companion"
			if hasCompanion != tt.companion {
				t.Errorf("companion %v, want %v", hasCompanion, tt.companion)
			}
		})
	}
}
