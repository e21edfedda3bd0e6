package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"slipway.dev/slipway/internal/devcluster/devtest"
	"slipway.dev/slipway/internal/spec"
)

// spireRefusals: in the pod of two's node c, on the real node, one more agent at a time
// presents a token the server must refuse; each fails to attest, for the reason the case
// names (the agent's log and the server's log say it), and the server gains no agent.
func spireRefusals(t *testing.T, one, two *spireTest, adm *spireAdmin, realNode, deletedPodToken string) {
	c := two.realPod("c", realNode)
	other, err := two.Kube.Clientset.CoreV1().ServiceAccounts(two.Name).CreateToken(context.Background(), spec.ServiceAccountName("c"),
		&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{Audiences: []string{"other"}, ExpirationSeconds: ptr.To(int64(600)),
			BoundObjectRef: &authv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: c.Name, UID: c.UID}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		cluster string
		token   string   // "": the pod's own projected token
		reason  []string // in the agent's log and the server's (both quote '"' as '\"')
		agent   string   // in the agent's log: it crashed, or retries
	}{
		// c's own token (audience spire-server, its pod alive), presented for the other
		// group's cluster: its account is not on that cluster's allow list.
		{"an account not on the allow list", one.cluster, "",
			[]string{two.Name + `:node-c\" is not an allowed service account`}, "Agent crashed"},
		{"a wrong audience", two.cluster, other.Status.Token,
			[]string{`token audiences [\"other\"] is invalid for the target audiences [\"spire-server\"]`}, "Failed to retrieve attestation result"},
		// a's kubelet token, read before a's pod went (its account is on the allow list).
		{"a deleted pod's token", one.cluster, deletedPodToken,
			[]string{"service account token has been invalidated"}, "Failed to retrieve attestation result"},
	} {
		name := strings.ReplaceAll(tc.name, " ", "-")
		name = strings.ReplaceAll(name, "'", "")
		path := spec.DefaultSpireTokenPath
		if tc.token != "" {
			path = "/tmp/spire/" + name + ".token"
			two.putFile(c.Name, path, tc.token)
		}
		serverLog := filepath.Join(two.Env.Dir, "logs", "spire-server.log")
		seen := len(readOrEmpty(serverLog)) // what the server logged before this case
		// execStdin: its limit (2 minutes) is above the script's 90 s.
		log := two.execStdin(c.Name, "", "/bin/sh", "/etc/spire/agent", "try", name, tc.cluster, path)
		for _, w := range append([]string{tc.agent}, tc.reason...) {
			if !strings.Contains(log, w) {
				t.Errorf("%s: the agent's log lacks %q:\n%s", tc.name, w, log)
			}
		}
		if strings.Contains(log, "Node attestation was successful") {
			t.Errorf("%s: the agent attested:\n%s", tc.name, log)
		}
		server := string(readOrEmpty(serverLog)[seen:])
		for _, w := range tc.reason {
			if !strings.Contains(server, w) {
				t.Errorf("%s: the server's log (%d bytes) lacks %q", tc.name, len(server), w)
			}
		}
		for id, sel := range adm.agents(t, one.cluster) {
			if slices.Contains(sel, "agent_pod_uid:"+string(c.UID)) {
				t.Errorf("%s: agent %s of %s has c's pod: %v", tc.name, id, one.cluster, sel)
			}
		}
		t.Logf("refused, %s: %s", tc.name, tc.reason)
	}
	if a := adm.agents(t, two.cluster); len(a) != 1 {
		t.Errorf("agents of %s: %v, want c's alone", two.cluster, a)
	}
	if diff := cmp.Diff([]string{two.hostID("c")}, two.fetch(c.Name)); diff != "" {
		t.Errorf("c's SVIDs after the refused agents (-want +got):\n%s", diff)
	}
}

// putFile writes content to path in pod's node container through stdin (a token never goes
// in an argument) and reads its size back: once in a loaded run kubectl exec -i delivered none
// of a token's bytes, and the case then presented an empty file instead of the token.
func (g *Group) putFile(pod, path, content string) {
	g.t.Helper()
	devtest.WaitFor(g.t, time.Minute, "pod "+pod+": "+path+" written", func() (bool, string) {
		g.execStdin(pod, content, "sh", "-c", `mkdir -p "${0%/*}" && umask 077 && cat > "$0"`, path)
		size := strings.TrimSpace(g.execStdin(pod, "", "sh", "-c", `wc -c < "$0"`, path))
		return size == strconv.Itoa(len(content)), fmt.Sprintf("%s bytes, want %d", size, len(content))
	})
}

// kubeconfigToken is the token of the kubeconfig slipway keeps for st's cluster on the spire
// node (read over the dev environment's path).
func (st *spireTest) kubeconfigToken(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(st.s.ConfigDir, "k8s_psat.d", st.cluster, st.Name+".kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if tok, ok := strings.CutPrefix(strings.TrimSpace(l), "token: "); ok && len(tok) > 100 {
			return tok
		}
	}
	t.Fatalf("kubeconfig of %s holds no token", st.cluster)
	return ""
}

// pemBody is the base64 lines of a PEM file: any of them in an output would leak the key.
func pemBody(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); len(l) >= 16 && !strings.HasPrefix(l, "-----") {
			out = append(out, l)
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no PEM body", file)
	}
	return out
}

// spireNoSecrets: the kubeconfigs' tokens (tokens), the SSH key and the admin SVID's key are
// in no output of the runs, no state, not in the saved plan file and in no process argument
// seen during the hand-offs (args).
func spireNoSecrets(t *testing.T, one, two *spireTest, tokens map[string]string, planText string, args []string) {
	secrets := map[string]string{}
	for c, tok := range tokens {
		secrets["the token of "+c+"'s kubeconfig"] = tok
		secrets["the signature of "+c+"'s token"] = tok[strings.LastIndex(tok, ".")+1:]
	}
	for i, l := range pemBody(t, one.s.SSHKey) {
		secrets["line "+strconv.Itoa(i)+" of the SSH key"] = l
	}
	for i, l := range pemBody(t, one.s.AdminKey) {
		secrets["line "+strconv.Itoa(i)+" of the admin SVID's key"] = l
	}
	places := map[string]string{"the saved plan file": planText, "the process arguments": strings.Join(args, "\n")}
	for _, st := range []*spireTest{one, two} {
		for i, r := range st.outputs {
			places[st.Name+"'s run "+strconv.Itoa(i)] = r.Stdout + "\n" + r.Stderr
		}
	}
	for where, text := range places {
		for what, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("%s holds %s", where, what)
			}
		}
	}
	sshd := slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "sshd") })
	t.Logf("%d secrets checked in %d places (%d runs' output, %d distinct command lines; an sshd session among them: %v)",
		len(secrets), len(places), len(places)-2, len(args), sshd)
}
