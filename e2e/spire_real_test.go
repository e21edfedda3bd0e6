package e2e

// Issue 37 on the real node: nodes whose image runs spire-agent attest with k8s_psat, using
// the kubelet's projected token, to the dev environment's SPIRE server (dev up --spire), and
// fetch their X.509-SVIDs in their pods. The dev cluster has one real kubelet node, so the
// test moves the nodes on and off it in turn: that is also how it shows that two agents never
// share a kube node.

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slipway.dev/slipway/internal/devcluster"
	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/spec"
)

// The nodes of the SPIRE groups: on the real node ({{REAL}}), or on a simulated kwok node
// (no placement), where no agent really runs.
const (
	spireRealA = "  a:\n    {{REAL}}\n"
	// A node leaves the real node by another nodeSelector, not by dropping its placement:
	// plan does not see a field dropped from the file (the Subset shortcut of dryrun.Run).
	spireKwokA = "  a:\n    " + spireKwokPlacement + "\n"
	// b waits less for its rollout: while a holds the real node it stays Pending.
	spireRealB = "  b:\n    rolloutTimeout: 40s\n    {{REAL}}\n"
	spireKwokB = "  b:\n    " + spireKwokPlacement + "\n"
	spireRealC = "  c:\n    {{REAL}}\n"

	spireKwokPlacement = `placement: {nodeSelector: {type: kwok}, tolerations: [{key: ` + realLabel + `, operator: Equal, value: "true", effect: NoSchedule}]}`
)

// TestSpireReal: issue 37's tests on the dev environment. One group with node a on the real
// node attests and holds its own SVID; a second apply changes nothing; node b cannot share
// the kube node (its pod stays Pending on the anti-affinity) and, once a leaves the real node,
// attests and gets only b's SVID; a second group's node gets only its own; the server refuses
// an account not on the allow list, a wrong audience and a deleted pod's token; destroy leaves
// none of the groups' entries or files; no credential shows in any output, state, plan file
// or process argument.
func TestSpireReal(t *testing.T) {
	t.Parallel()
	kwok := holdSpireKwok(t)
	one, node := newSpireGroup(t, "sp-one", spireGroup(spireRealA))
	adm := newSpireAdmin(t, one.s)
	var args []string             // the command lines seen during the hand-offs
	tokens := map[string]string{} // cluster → the token of its kubeconfig on the spire node
	// The steps share the groups and the one real node, in turn: a failed step ends the test
	// (the helpers fail the test itself, so the steps are not subtests).
	step := func(name string, f func(t *testing.T)) {
		start := time.Now()
		f(t)
		if t.Failed() {
			t.Fatalf("step %q failed", name)
		}
		t.Logf("step %q passed in %s", name, time.Since(start).Round(time.Second))
	}
	planFile, planText := filepath.Join(one.Dir, "spire.plan"), ""
	step("node attests with the kubelet's token and holds its own SVID", func(t *testing.T) {
		r := one.run(0, "plan", "-out", planFile)
		if planText = string(readOrEmpty(planFile)); planText == "" {
			t.Fatalf("plan -out %s wrote nothing", planFile)
		}
		for _, w := range []string{"spire kubeconfig " + one.cluster, "spire allow-list " + one.Name + ":node-a", "spire entry " + one.hostID("a")} {
			if !strings.Contains(r.Stdout, w) {
				t.Errorf("plan does not show %q:\n%s", w, r.Stdout)
			}
		}
		planText += spireEditedPlans(t, one, adm, planFile)
		// The refused applies made the group's own objects (their step comes before spire's):
		// the saved plan is stale, so it is made again.
		one.run(0, "plan", "-out", planFile)
		planText += string(readOrEmpty(planFile))
		stop := cmdlines()
		one.run(0, "apply", planFile)
		args = append(args, stop()...)
		spireAttested(t, one, adm, node, "a")
		tokens[one.cluster] = one.kubeconfigToken(t)
	})
	step("a second apply changes nothing", func(t *testing.T) { spireNoChange(t, one, adm) })
	var aToken string
	step("two agents never share a kube node, each gets only its own SVID", func(t *testing.T) {
		a := one.realPod("a", node)
		one.writeGroup(spireGroup(spireRealA + spireRealB))
		r := one.run(1, "apply", "--yes")
		if !strings.Contains(r.Stdout+r.Stderr, "anti-affinity") {
			t.Errorf("apply with b: want its failure to name the anti-affinity, got %s", r)
		}
		spirePending(t, one, "b")
		if got := one.realPod("a", node); got.UID != a.UID {
			t.Errorf("a's pod changed from %s to %s: adding b must not touch a", a.Name, got.Name)
		}
		// b's entries are on the server now, and a's agent still holds only a's identity.
		if got := len(adm.entries(t, one.cluster)); got != 4 {
			t.Errorf("entries of %s with b: %d, want 4 (an alias and a host entry each)", one.cluster, got)
		}
		if diff := cmp.Diff([]string{one.hostID("a")}, one.fetch(a.Name)); diff != "" {
			t.Errorf("a's SVIDs with b's entries on the server (-want +got):\n%s", diff)
		}
		if aToken = one.exec(a.Name, "cat", spec.DefaultSpireTokenPath); strings.Count(aToken, ".") != 2 {
			t.Fatalf("a's projected token is not a JWT (%d bytes)", len(aToken))
		}
		// a leaves the real node (its entries stay): b takes it, attests and gets only b's.
		kwok.take(1)
		one.writeGroup(spireGroup(spireKwokA + spireRealB))
		one.run(0, "apply", "--yes", "--timeout", "3m")
		if p := one.roPods("a"); len(p) != 1 || p[0].Spec.NodeName == node {
			t.Fatalf("a's pods after the move: %d (%v); want one, off the real node", len(p), roPodNames(p))
		}
		spireAttested(t, one, adm, node, "b")
		// Never, not only now: b's agent took a's agent ID (one per kube node), and its log
		// names every SVID it was ever handed; a's alias selected a's new pods before a's
		// old pod went, so whatever the server still knew of the ID matched none of a's.
		bPod := one.realPod("b", node)
		if log, _ := one.execIn(bPod.Name, "node", "cat", "/tmp/spire/node/log"); strings.Contains(log, one.hostID("a")) ||
			!strings.Contains(log, one.hostID("b")) {
			t.Errorf("b's agent log names a's SVID %s, or not b's own:\n%s", one.hostID("a"), log)
		}
		if got := len(adm.entries(t, one.cluster)); got != 4 {
			t.Errorf("entries of %s: %d, want a's and b's, 4", one.cluster, got)
		}
	})
	kwok.take(1)
	one.writeGroup(spireGroup(spireKwokA + spireKwokB))
	one.run(0, "apply", "--yes")
	two, _ := newSpireGroup(t, "sp-two", spireGroup(spireRealC))
	step("a third group sharing the server gets neither identity", func(t *testing.T) {
		stop := cmdlines()
		two.run(0, "apply", "--yes")
		args = append(args, stop()...)
		spireAttested(t, two, adm, node, "c")
		tokens[two.cluster] = two.kubeconfigToken(t)
		if two.cluster == one.cluster {
			t.Fatalf("two groups share the cluster name %s", one.cluster)
		}
	})
	step("the server refuses", func(t *testing.T) { spireRefusals(t, one, two, adm, node, aToken) })
	step("destroy leaves no entry or file of the group", func(t *testing.T) {
		for _, g := range []*spireTest{one, two} {
			g.outputs = append(g.outputs, Result{Stdout: string(readOrEmpty(filepath.Join(g.Dir, ".slipway", "state", g.Name+".json")))})
			g.run(0, "state", "show", "-o", "json")
			stop := cmdlines()
			g.run(0, "destroy", "--yes")
			args = append(args, stop()...)
			spireGone(t, g, adm)
		}
	})
	step("no credential in any output, state, plan file or argument", func(t *testing.T) {
		spireNoSecrets(t, one, two, tokens, planText, args)
	})
}

// spireAttested: node's pod runs on the real node, its agent attested with the kubelet's
// projected token of its pod (the agent's selectors name the pod's UID), and the agent hands
// root exactly the node's host SVID.
func spireAttested(t *testing.T, st *spireTest, adm *spireAdmin, realNode, node string) {
	t.Helper()
	pod := st.realPod(node, realNode)
	if got := strings.TrimSpace(st.exec(pod.Name, "stat", "-L", "-c", "%a %u", spec.DefaultSpireTokenPath)); got != "400 0" {
		t.Errorf("the projected token in %s: mode and owner %q, want 400 0 (only root reads it)", pod.Name, got)
	}
	if diff := cmp.Diff([]string{st.hostID(node)}, st.fetch(pod.Name)); diff != "" {
		t.Errorf("node %s's SVIDs (-want +got):\n%s", node, diff)
	}
	agents := adm.agents(t, st.cluster)
	if len(agents) != 1 {
		t.Fatalf("agents of %s on the server: %v, want one", st.cluster, agents)
	}
	for id, sel := range agents {
		for _, want := range []string{"agent_ns:" + st.Name, "agent_sa:" + spec.ServiceAccountName(node),
			"agent_pod_uid:" + string(pod.UID), "agent_node_name:" + realNode, "cluster:" + st.cluster} {
			if !slices.Contains(sel, want) {
				t.Errorf("agent %s: selectors %v lack %s", id, sel, want)
			}
		}
	}
	files := spireFiles(t, st.s.ConfigDir)
	for _, f := range []string{"k8s_psat.d/" + st.cluster + "/" + st.Name + ".kubeconfig", "k8s_psat.d/" + st.cluster + "/" + st.Name + ".allow/" + st.Name + ":node-" + node} {
		if _, ok := files[f]; !ok {
			t.Errorf("the spire node has no %s: %v", f, files)
		}
	}
}

// spirePending: node's pod is not scheduled, and the scheduler says it is the anti-affinity.
func spirePending(t *testing.T, st *spireTest, node string) {
	t.Helper()
	pods := st.roPods(node)
	if len(pods) != 1 {
		t.Fatalf("%s: %d pods, want 1", node, len(pods))
	}
	p := pods[0]
	if p.Spec.NodeName != "" {
		t.Fatalf("pod %s was scheduled to %s beside another agent", p.Name, p.Spec.NodeName)
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable &&
			strings.Contains(c.Message, "anti-affinity") {
			t.Logf("pod %s: %s", p.Name, c.Message)
			return
		}
	}
	t.Errorf("pod %s: conditions %+v, want PodScheduled False, Unschedulable, naming the anti-affinity", p.Name, p.Status.Conditions)
}

// spireNoChange: a second plan and apply say No changes., and leave the entries (their
// revisions), the spire node's files of the deployment (content and mtime; of the shared
// k8s_psat.hcl its cluster's block, and the mtime unless another deployment changed the rest),
// the ConfigMap spire-agent and the token-review rights (resourceVersions) and the pod as they
// were.
func spireNoChange(t *testing.T, st *spireTest, adm *spireAdmin) {
	t.Helper()
	snap := func() map[string]any {
		ctx := context.Background()
		cs := st.Kube.Clientset
		rv := map[string]string{}
		if cm, err := cs.CoreV1().ConfigMaps(st.Name).Get(ctx, spec.SpireAgentConfigMap, metav1.GetOptions{}); err == nil {
			rv["configmap"] = cm.ResourceVersion
		}
		name := kube.SpireRBACName(st.Name)
		if r, err := cs.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{}); err == nil {
			rv["clusterrole"] = r.ResourceVersion
		}
		if b, err := cs.RbacV1().ClusterRoleBindings().Get(ctx, name, metav1.GetOptions{}); err == nil {
			rv["clusterrolebinding"] = b.ResourceVersion
		}
		return map[string]any{"entries": adm.entries(t, st.cluster), "files": spireOwnFiles(t, st),
			"resourceVersions": rv, "pods": st.PodUIDs()}
	}
	hcl := readSpireHCL(t, st)
	before := snap()
	t.Logf("before the second apply: %v", before)
	if len(before["entries"].([]string)) != 2 || len(before["resourceVersions"].(map[string]string)) != 3 {
		t.Fatalf("after the first apply: want 2 entries and the 3 objects, got %v", before)
	}
	if r := st.run(0, "plan"); !strings.Contains(r.Stdout, "No changes.") {
		t.Errorf("plan after apply: want No changes., got %s", r)
	}
	if r := st.run(0, "apply", "--yes"); !strings.Contains(r.Stdout, "No changes.") {
		t.Errorf("second apply: want No changes., got %s", r)
	}
	if diff := cmp.Diff(before, snap()); diff != "" {
		t.Errorf("the second apply changed (-before +after):\n%s", diff)
	}
	hcl.unchanged(t, readSpireHCL(t, st), "the second apply")
}

// spireOwnFiles are spireFiles of st's deployment: those under k8s_psat.d of its cluster.
// The others belong to the deployments of tests running beside it on the one server.
func spireOwnFiles(t *testing.T, st *spireTest) map[string]string {
	t.Helper()
	out := map[string]string{}
	for f, v := range spireFiles(t, st.s.ConfigDir) {
		if strings.HasPrefix(f, "k8s_psat.d/"+st.cluster+"/") || strings.HasPrefix(f, "k8s_psat.d/"+st.cluster+".") {
			out[f] = v
		}
	}
	return out
}

// spireHCL is the spire node's k8s_psat.hcl, which every deployment on the server shares:
// its mtime, the block of one cluster, and the rest of the text.
type spireHCL struct{ mtime, own, others string }

func readSpireHCL(t *testing.T, st *spireTest) spireHCL {
	t.Helper()
	p := filepath.Join(st.s.ConfigDir, "k8s_psat.hcl")
	fi, err := os.Stat(p)
	if os.IsNotExist(err) {
		return spireHCL{}
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	text, h := string(b), spireHCL{mtime: fi.ModTime().UTC().Format(time.RFC3339Nano)}
	start := strings.Index(text, "  \""+st.cluster+"\" = {\n")
	if start < 0 {
		h.others = text
		return h
	}
	end := strings.Index(text[start:], "\n  }\n")
	if end < 0 {
		t.Fatalf("%s: the block of %s does not end:\n%s", p, st.cluster, text)
	}
	h.own = text[start : start+end+len("\n  }\n")]
	h.others = text[:start] + text[start+len(h.own):]
	return h
}

// unchanged fails unless after has the block of h's cluster as h has it, and the same mtime
// when the rest of the file is the same too (when another deployment changed its block
// meanwhile, its apply rewrote the file: the mtime then cannot tell whether this one did).
func (h spireHCL) unchanged(t *testing.T, after spireHCL, what string) {
	t.Helper()
	if after.own != h.own {
		t.Errorf("%s changed the cluster's block of k8s_psat.hcl:\n%s\nafter:\n%s", what, h.own, after.own)
	}
	if after.others == h.others && after.mtime != h.mtime {
		t.Errorf("%s wrote k8s_psat.hcl (mtime %s, then %s) without a change", what, h.mtime, after.mtime)
	}
}

// spireGone: after destroy the server has no entry or agent of the group's cluster, the spire
// node no kubeconfig or allow list of it and k8s_psat.hcl does not name it, the rights are
// gone.
func spireGone(t *testing.T, st *spireTest, adm *spireAdmin) {
	t.Helper()
	if e := adm.entries(t, st.cluster); len(e) != 0 {
		t.Errorf("entries of %s after destroy: %v", st.cluster, e)
	}
	for f := range spireFiles(t, st.s.ConfigDir) {
		if strings.Contains(f, st.cluster) {
			t.Errorf("the spire node keeps %s after destroy", f)
		}
	}
	if b, err := os.ReadFile(filepath.Join(st.s.ConfigDir, "k8s_psat.hcl")); err != nil || strings.Contains(string(b), st.cluster) {
		t.Errorf("k8s_psat.hcl after destroy (%v) names %s:\n%s", err, st.cluster, b)
	}
	_, err := st.Kube.Clientset.RbacV1().ClusterRoles().Get(context.Background(), kube.SpireRBACName(st.Name), metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("ClusterRole %s after destroy: %v, want not found", kube.SpireRBACName(st.Name), err)
	}
	if a := adm.agents(t, st.cluster); len(a) != 0 {
		t.Errorf("agents of %s after destroy: %v", st.cluster, a)
	}
}

func readOrEmpty(path string) []byte {
	b, _ := os.ReadFile(path)
	return b
}

// spireEditedPlans: issue 46 item 10. A saved plan is a file anyone may edit: an allow-list
// name that would run a command on the spire node and an entry with the admin's SPIFFE ID
// (the counts unchanged) run nothing and mint nothing; apply refuses them.
func spireEditedPlans(t *testing.T, st *spireTest, adm *spireAdmin, planFile string) string {
	t.Helper()
	// The plan file is indented JSON (plan.Write): a key, ": ", its value.
	allow := `"name": "` + st.Name + `:node-a"`
	host := `"spiffeID": "` + st.hostID("a") + `"`
	var texts strings.Builder
	for _, tc := range []struct{ name, from, to string }{
		{"a command in an allow-list name", allow, `"name": "` + st.Name + `:node-a\"; touch pwned; echo \""`},
		{"the admin's SPIFFE ID", host, `"spiffeID": "spiffe://` + devcluster.SpireTrustDomain + `/admin"`},
	} {
		name := tc.name
		// Each edit starts from a fresh plan: a refused apply made the group's own objects
		// (their step comes before spire's), so the plan before it is stale for that reason
		// alone.
		st.run(0, "plan", "-out", planFile)
		text := string(readOrEmpty(planFile))
		texts.WriteString(text)
		edited := strings.Replace(text, tc.from, tc.to, 1)
		if edited == text {
			t.Fatalf("%s: the plan file does not hold %s", name, tc.from)
		}
		f := filepath.Join(st.Dir, "edited.plan")
		if err := os.WriteFile(f, []byte(edited), 0o600); err != nil {
			t.Fatal(err)
		}
		r := st.Run("apply", f)
		st.outputs = append(st.outputs, r)
		if r.Code == 0 || !strings.Contains(r.Stdout+r.Stderr, "saved plan") {
			t.Errorf("%s: apply of the edited plan: want a refusal naming the saved plan, got %s", name, r)
		}
		if e := adm.entries(t, st.cluster); len(e) != 0 {
			t.Errorf("%s: entries after the edited plan: %v", name, e)
		}
		if _, err := os.Stat(filepath.Join(st.s.ConfigDir, "k8s_psat.d", st.cluster)); err == nil {
			t.Errorf("%s: the spire node has files of %s after the edited plan", name, st.cluster)
		}
	}
	return texts.String()
}
