package spire

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
)

// The spire node's layout (the contract with the dev environment, docs/group-file.md):
// <configDir>/k8s_psat.d/<cluster>.kubeconfig (0600) and one empty drop file per allowed
// account in <configDir>/k8s_psat.d/<cluster>.allow/<namespace>:<account>; after a change
// <configDir>/k8s_psat.hcl is made again from every cluster there, atomically, and the
// server (the PID in pidFile) gets SIGUSR1 to read it again.

// remoteState is what the spire node holds of one cluster.
type remoteState struct {
	allow []string // <ns>:<sa>, sorted
	// kubeconfig is the cluster's kubeconfig without its token lines; nil when it has none.
	kubeconfig []string
}

// readScript lists the cluster's drop files and its kubeconfig without the token: the
// token's line is taken out on the spire node, so that it never comes back.
func readScript(configDir, cluster string) string {
	return fmt.Sprintf(`set -eu
d='%s/k8s_psat.d'
c='%s'
if [ -d "$d/$c.allow" ]; then
  for f in "$d/$c.allow"/*; do [ -e "$f" ] && echo "allow ${f##*/}"; done
fi
if [ -f "$d/$c.kubeconfig" ]; then
  echo kubeconfig-begin
  grep -v '^ *token:' "$d/$c.kubeconfig" | sed 's/^/| /' || true
  echo kubeconfig-end
fi
exit 0
`, configDir, cluster)
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
			st.allow = append(st.allow, strings.TrimPrefix(line, "allow "))
		}
	}
	slices.Sort(st.allow)
	return st
}

func (l *Lane) readRemote(ctx context.Context, cluster string) (remoteState, error) {
	out, err := l.Node.Run(ctx, readScript(l.Spire.ConfigDir, cluster))
	if err != nil {
		return remoteState{}, fmt.Errorf("spire node %s: read k8s_psat.d: %w", l.Spire.SSH, err)
	}
	return parseRemote(out), nil
}

// allowChanges make the cluster's drop files the accounts of nodes.
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

// syncScript changes the cluster's files on the spire node as cs say (kubeconfig the new
// kubeconfig's text, "" when it does not change), makes k8s_psat.hcl again from every
// cluster, and signals the server. Concurrent runs (several groups share a server) take turns
// through a lock directory.
func syncScript(s *spec.Spire, cluster string, cs []plan.SpireChange, kubeconfig string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `set -eu
umask 077
conf='%s'
d="$conf/k8s_psat.d"
c='%s'
pidfile='%s'
mkdir -p "$d/$c.allow"
i=0
until mkdir "$conf/.k8s_psat.lock" 2>/dev/null; do
  i=$((i+1)); [ "$i" -lt 60 ] || { echo "spire node: $conf/.k8s_psat.lock held for 60 s" >&2; exit 1; }
  sleep 1
done
trap 'rmdir "$conf/.k8s_psat.lock"' EXIT
`, s.ConfigDir, cluster, s.PIDFile)
	for _, c := range cs {
		switch {
		case c.What == plan.SpireAllow && c.Action == plan.Create:
			fmt.Fprintf(&b, ": > \"$d/$c.allow/%s\"\n", c.Name)
		case c.What == plan.SpireAllow && c.Action == plan.Delete:
			fmt.Fprintf(&b, "rm -f \"$d/$c.allow/%s\"\n", c.Name)
		case c.What == plan.SpireKubeconfig && c.Action == plan.Delete:
			b.WriteString("rm -f \"$d/$c.kubeconfig\"\nrm -rf \"$d/$c.allow\"\n")
		}
	}
	if kubeconfig != "" {
		eof := heredocEnd()
		fmt.Fprintf(&b, "cat > \"$d/.$c.kubeconfig.tmp\" <<'%s'\n%s%s\nchmod 600 \"$d/.$c.kubeconfig.tmp\"\nmv -f \"$d/.$c.kubeconfig.tmp\" \"$d/$c.kubeconfig\"\n",
			eof, kubeconfig, eof)
	}
	b.WriteString(regenerate)
	return b.String()
}

// regenerate writes k8s_psat.hcl from every cluster's kubeconfig and drop files, and has
// the server read it again.
const regenerate = `tmp="$conf/.k8s_psat.hcl.tmp"
{
  echo 'clusters = {'
  for k in "$d"/*.kubeconfig; do
    [ -e "$k" ] || continue
    n=${k##*/}; n=${n%.kubeconfig}
    printf '  "%s" = {\n    service_account_allow_list = [' "$n"
    sep=''
    for f in "$d/$n.allow"/*; do
      [ -e "$f" ] || continue
      printf '%s"%s"' "$sep" "${f##*/}"; sep=', '
    done
    printf ']\n    audience = ["spire-server"]\n    kube_config_file = "%s"\n  }\n' "$k"
  done
  echo '}'
} > "$tmp"
chmod 644 "$tmp"
mv -f "$tmp" "$conf/k8s_psat.hcl"
kill -USR1 "$(cat "$pidfile")"
exit 0
`

// heredocEnd is a here-document's end line nothing in the kubeconfig can hold.
func heredocEnd() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "SLIPWAY_END_" + hex.EncodeToString(b)
}
