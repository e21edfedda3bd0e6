package spire

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
)

// The spire node's layout (the contract with the dev environment, docs/group-file.md), per
// deployment (its identity, spec.Group.Name) within its cluster (<kube-system UID>-<ns>):
// <configDir>/k8s_psat.d/<cluster>/<deployment>.kubeconfig (0600) and one empty drop file per
// allowed account in <configDir>/k8s_psat.d/<cluster>/<deployment>.allow/<ns>:<account>.
// After a change <configDir>/k8s_psat.hcl is made again from every cluster there (its allow
// list the union of its deployments', its kubeconfig the first deployment's), atomically,
// and the server (the PID in pidFile, checked to be spire-server) gets SIGUSR1 to read it
// again; the script waits for the server's log to say it did. The layout of the release
// before (<cluster>.kubeconfig, <cluster>.allow/) is still read into k8s_psat.hcl; an apply
// of the cluster's namespace takes it over and removes it.

// remoteState is what the spire node holds of one deployment.
type remoteState struct {
	allow []string // <ns>:<sa>, sorted
	// kubeconfig is the deployment's kubeconfig without its token lines; nil when it has none.
	kubeconfig []string
	// legacyAllow and legacyKubeconfig: the cluster's files in the layout of the release
	// before per-deployment keys.
	legacyAllow      []string
	legacyKubeconfig bool
	// foreign are names in the deployment's allow directory that are no account name:
	// slipway never made them, never passes them to a shell and says so.
	foreign []string
}

// accountName is what an allow file's name must be: <namespace>:<account>, DNS labels.
var accountName = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?:[a-z0-9]([a-z0-9.-]*[a-z0-9])?$`)

// shq quotes s for POSIX sh: nothing in it is read by the shell.
func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// readScript lists the deployment's drop files and its kubeconfig without the token (the
// token's line is taken out on the spire node, so that it never comes back), and the
// cluster's legacy files.
func readScript(configDir, cluster, deployment string) string {
	return fmt.Sprintf(`set -eu
d=%s/k8s_psat.d
c=%s
g=%s
if [ -d "$d/$c/$g.allow" ]; then
  for f in "$d/$c/$g.allow"/*; do [ -e "$f" ] && printf 'allow %%s\n' "${f##*/}"; done
fi
if [ -f "$d/$c/$g.kubeconfig" ]; then
  echo kubeconfig-begin
  grep -v '^ *token:' "$d/$c/$g.kubeconfig" | sed 's/^/| /' || true
  echo kubeconfig-end
fi
if [ -d "$d/$c.allow" ]; then
  for f in "$d/$c.allow"/*; do [ -e "$f" ] && printf 'legacy-allow %%s\n' "${f##*/}"; done
fi
if [ -f "$d/$c.kubeconfig" ]; then echo legacy-kubeconfig; fi
exit 0
`, shq(configDir), shq(cluster), shq(deployment))
}

func parseRemote(out string) remoteState {
	var st remoteState
	inKC := false
	for _, line := range strings.Split(out, "\n") {
		switch {
		case line == "kubeconfig-begin":
			inKC, st.kubeconfig = true, []string{}
		case line == "kubeconfig-end":
			inKC = false
		case inKC:
			st.kubeconfig = append(st.kubeconfig, strings.TrimPrefix(strings.TrimPrefix(line, "|"), " "))
		case strings.HasPrefix(line, "allow "):
			if n := strings.TrimPrefix(line, "allow "); accountName.MatchString(n) {
				st.allow = append(st.allow, n)
			} else {
				st.foreign = append(st.foreign, n)
			}
		case strings.HasPrefix(line, "legacy-allow "):
			if n := strings.TrimPrefix(line, "legacy-allow "); accountName.MatchString(n) {
				st.legacyAllow = append(st.legacyAllow, n)
			}
		case line == "legacy-kubeconfig":
			st.legacyKubeconfig = true
		}
	}
	slices.Sort(st.allow)
	slices.Sort(st.legacyAllow)
	return st
}

func (l *Lane) readRemote(ctx context.Context, cluster string) (remoteState, error) {
	out, err := l.Node.Run(ctx, readScript(l.Spire.ConfigDir, cluster, l.Group))
	if err != nil {
		return remoteState{}, fmt.Errorf("spire node %s: read k8s_psat.d: %w", l.Spire.SSH, err)
	}
	return parseRemote(out), nil
}

// allowChanges make the deployment's drop files the accounts of nodes.
func allowChanges(cluster, ns string, nodes []string, live []string) []plan.SpireChange {
	want := map[string]string{}
	for _, n := range nodes {
		want[ns+":"+spec.ServiceAccountName(n)] = n
	}
	var out []plan.SpireChange
	for _, n := range nodes {
		name := ns + ":" + spec.ServiceAccountName(n)
		if !slices.Contains(live, name) {
			out = append(out, plan.SpireChange{Node: n, What: plan.SpireAllow, Name: name, Action: plan.Create, Cluster: cluster})
		}
	}
	for _, name := range live {
		if _, ok := want[name]; !ok {
			out = append(out, plan.SpireChange{Node: strings.TrimPrefix(strings.TrimPrefix(name, ns+":"), "node-"), What: plan.SpireAllow, Name: name, Action: plan.Delete, Cluster: cluster})
		}
	}
	return out
}

// legacyChanges: the cluster's files in the layout before per-deployment keys, which apply
// takes over (the deployment's own are made in the same session).
func legacyChanges(cluster string, remote remoteState) []plan.SpireChange {
	if !remote.legacyKubeconfig && len(remote.legacyAllow) == 0 {
		return nil
	}
	return []plan.SpireChange{{What: plan.SpireKubeconfig, Name: cluster + ".kubeconfig", Action: plan.Delete, Cluster: cluster,
		Reason: "the layout before per-deployment files (" + cluster + ".kubeconfig and " + cluster + ".allow/): the deployment's own replace it"}}
}

// kubeconfigShape is what the kubeconfig holds besides its token.
type kubeconfigShape struct {
	server    string
	ca        []byte
	namespace string
}

// kubeconfigHeader is the kubeconfig's first line: whose token it holds and for how long,
// so that a plan can judge it without the token.
func kubeconfigHeader(accountUID string, issued, expires time.Time) string {
	return fmt.Sprintf("# slipway: token of service account %s (uid %s), issued %s, expires %s",
		spec.SpireServerAccount, accountUID, issued.UTC().Format(time.RFC3339), expires.UTC().Format(time.RFC3339))
}

// kubeconfigText is the kubeconfig the server reviews tokens with. It holds the token: it
// goes nowhere but the spire node's stdin.
func kubeconfigText(cluster string, s kubeconfigShape, header, token string) string {
	var b strings.Builder
	b.WriteString(header + "\n")
	b.WriteString(kubeconfigBody(cluster, s, token))
	return b.String()
}

func kubeconfigBody(cluster string, s kubeconfigShape, token string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Config\nclusters:\n- name: %s\n  cluster:\n    server: %s\n", cluster, s.server)
	if len(s.ca) > 0 {
		fmt.Fprintf(&b, "    certificate-authority-data: %s\n", base64.StdEncoding.EncodeToString(s.ca))
	}
	fmt.Fprintf(&b, "users:\n- name: %s\n  user:\n", spec.SpireServerAccount)
	if token != "" {
		fmt.Fprintf(&b, "    token: %s\n", token)
	}
	fmt.Fprintf(&b, "contexts:\n- name: %s\n  context:\n    cluster: %s\n    user: %s\n    namespace: %s\ncurrent-context: %s\n",
		cluster, cluster, spec.SpireServerAccount, s.namespace, cluster)
	return b.String()
}

// kubeconfigChange judges the spire node's kubeconfig (without its token): missing, for
// another API server or CA, or its token past half its life.
func kubeconfigChange(cluster string, remote remoteState, want kubeconfigShape, now time.Time) *plan.SpireChange {
	c := &plan.SpireChange{What: plan.SpireKubeconfig, Name: cluster, Cluster: cluster}
	if remote.kubeconfig == nil {
		c.Action, c.Reason = plan.Create, "a token of "+want.namespace+":"+spec.SpireServerAccount+" for "+want.server+", through the SSH session's stdin"
		return c
	}
	lines := remote.kubeconfig
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "# slipway: ") {
		c.Action, c.Reason = plan.Update, "not one slipway wrote"
		return c
	}
	if strings.Join(lines[1:], "\n")+"\n" != kubeconfigBody(cluster, want, "") {
		c.Action, c.Reason = plan.Update, "the API server, its CA or the account changed"
		return c
	}
	issued, expires, ok := headerTimes(lines[0])
	switch {
	case !ok:
		c.Action, c.Reason = plan.Update, "its header is unreadable"
	case now.After(issued.Add(expires.Sub(issued) / 2)):
		c.Action, c.Reason = plan.Update, "its token is past half its life (expires "+expires.Format(time.RFC3339)+")"
	default:
		return nil
	}
	return c
}

func headerTimes(h string) (issued, expires time.Time, ok bool) {
	_, rest, ok1 := strings.Cut(h, ", issued ")
	is, ex, ok2 := strings.Cut(rest, ", expires ")
	if !ok1 || !ok2 {
		return time.Time{}, time.Time{}, false
	}
	i, err1 := time.Parse(time.RFC3339, is)
	e, err2 := time.Parse(time.RFC3339, strings.TrimSpace(ex))
	return i, e, err1 == nil && err2 == nil && e.After(i)
}

// heredocEnd is a here-document's end line nothing in the kubeconfig can hold.
func heredocEnd() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "SLIPWAY_END_" + hex.EncodeToString(b)
}
