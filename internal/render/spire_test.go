package render_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"slipway.dev/slipway/internal/render"
	"slipway.dev/slipway/internal/spec"
)

// TestSpireRules checks what the golden file of spire.yaml could hide: only the node's main
// pods run an agent, each keeps its own affinity, the token is root's only.
func TestSpireRules(t *testing.T) {
	objs := load(t, "testdata/workload/spire.yaml")
	if _, ok := find[*corev1.ServiceAccount](objs, "ServiceAccount", spec.SpireServerAccount); !ok {
		t.Error("no ServiceAccount spire-server")
	}
	cm, ok := find[*corev1.ConfigMap](objs, "ConfigMap", spec.SpireAgentConfigMap)
	if !ok || cm.Data[spec.SpireBundleFile] == "" || cm.Labels[spec.LabelNode] != "" {
		t.Errorf("ConfigMap spire-agent: %+v", cm)
	}
	seen := map[string]bool{}
	for _, name := range []string{"web", "db"} {
		d, _ := find[*appsv1.Deployment](objs, "Deployment", name)
		ps := d.Spec.Template.Spec
		if d.Spec.Template.Labels[spec.LabelSpireAgent] != "true" {
			t.Errorf("%s: pod lacks label %s", name, spec.LabelSpireAgent)
		}
		terms := ps.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
		if d := cmp.Diff([]corev1.PodAffinityTerm{render.SpireAntiAffinity(d.Namespace)}, terms); d != "" {
			t.Errorf("%s: required anti-affinity (-want +got):\n%s", name, d)
		}
		// Issue 46 item 11: each node's pods carry a digest of their template, which its
		// alias entry selects; two nodes' templates never share one.
		if v := d.Spec.Template.Labels[spec.LabelSpirePod]; len(v) != 16 || seen[v] {
			t.Errorf("%s: label %s=%q, want 16 hex digits of its own", name, spec.LabelSpirePod, v)
		} else {
			seen[v] = true
		}
		// Issue 43 item 10: only slipway's agent pods count, not any pod anyone labels.
		if ns := terms[0].NamespaceSelector; ns == nil || ns.MatchLabels[spec.LabelManagedBy] != spec.ManagedBy {
			t.Errorf("%s: the anti-affinity's namespace selector %v takes pods of namespaces not slipway's", name, ns)
		}
		var vol *corev1.Volume
		for i := range ps.Volumes {
			if ps.Volumes[i].Projected != nil {
				vol = &ps.Volumes[i]
			}
		}
		if vol == nil || *vol.Projected.DefaultMode != 0o400 || vol.Projected.Sources[0].ServiceAccountToken.Audience != spec.SpireAudience ||
			vol.Projected.Sources[0].ServiceAccountToken.Path != "token" {
			t.Errorf("%s: projected token volume %+v", name, vol)
		}
		if ps.ServiceAccountName != "node-"+name {
			t.Errorf("%s: account %s", name, ps.ServiceAccountName)
		}
	}
	db, _ := find[*appsv1.Deployment](objs, "Deployment", "db")
	if len(db.Spec.Template.Spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 1 {
		t.Error("db lost its own preferred anti-affinity")
	}
	worker, _ := find[*appsv1.Deployment](objs, "Deployment", "web-worker")
	if worker.Spec.Template.Labels[spec.LabelSpireAgent] != "" || worker.Spec.Template.Labels[spec.LabelSpirePod] != "" || worker.Spec.Template.Spec.Affinity != nil {
		t.Error("a role's pod is marked as an agent pod")
	}
}
