package spire

import (
	"fmt"
	"strings"

	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
)

// LockLease is how long the spire node's lock (.k8s_psat.lock) holds: a session that died
// holding it (a killed apply, a dropped connection) leaves it, and the next one takes it
// over once it is older than this. A session holds it for a few seconds.
const LockLease = 45

// syncScript changes the deployment's files on the spire node as cs say (kubeconfig the new
// kubeconfig's text, "" when it does not change), makes k8s_psat.hcl again from every
// cluster, and has the server read it. Every name in it is quoted; cs are the changes the
// lane planned from the validated group file at apply (never a saved plan's). Concurrent
// runs (several deployments share a server) take turns through a lock directory that names
// its owner and expires.
func syncScript(s *spec.Spire, cluster, deployment string, cs []plan.SpireChange, kubeconfig string) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, `set -eu
umask 077
conf=%s
d="$conf/k8s_psat.d"
c=%s
g=%s
pidfile=%s
lock="$conf/.k8s_psat.lock"
i=0
until mkdir "$lock" 2>/dev/null; do
  since=$(cat "$lock/since" 2>/dev/null || stat -c %%Y "$lock" 2>/dev/null || echo 0)
  case "$since" in ''|*[!0-9]*) since=0 ;; esac
  if [ "$since" -gt 0 ] && [ $(( $(date +%%s) - since )) -ge %d ]; then
    echo "spire node: taking over $lock, whose lease ran out (held by $(cat "$lock/owner" 2>/dev/null || echo nobody known))" >&2
    mv "$lock" "$lock.expired.$$" 2>/dev/null && rm -rf "$lock.expired.$$"
    continue
  fi
  i=$((i+1))
  [ "$i" -lt 90 ] || { echo "spire node: $lock held for 90 s by $(cat "$lock/owner" 2>/dev/null || echo nobody known)" >&2; exit 1; }
  sleep 1
done
trap 'rm -rf "$lock"' EXIT
date +%%s > "$lock/since"
printf 'deployment %%s, session %%s, since %%s\n' "$g" "$$" "$(date -u +%%Y-%%m-%%dT%%H:%%M:%%SZ)" > "$lock/owner"
`, shq(s.ConfigDir), shq(cluster), shq(deployment), shq(s.PIDFile), LockLease)
	b.WriteString(checkServer)
	b.WriteString("mkdir -p \"$d/$c/$g.allow\"\n")
	for _, c := range cs {
		switch {
		case c.What == plan.SpireAllow && (c.Action == plan.Create || c.Action == plan.Delete):
			if !accountName.MatchString(c.Name) {
				return "", fmt.Errorf("spire: allow-list name %q is no <namespace>:<account>", c.Name)
			}
			if c.Action == plan.Create {
				fmt.Fprintf(&b, ": > \"$d/$c/$g.allow/\"%s\n", shq(c.Name))
			} else {
				fmt.Fprintf(&b, "rm -f \"$d/$c/$g.allow/\"%s\n", shq(c.Name))
			}
		case c.What == plan.SpireKubeconfig && c.Action == plan.Delete && c.Name == cluster+".kubeconfig":
			b.WriteString("rm -f \"$d/$c.kubeconfig\"\nrm -rf \"$d/$c.allow\"\n")
		case c.What == plan.SpireKubeconfig && c.Action == plan.Delete:
			b.WriteString("rm -f \"$d/$c/$g.kubeconfig\"\nrm -rf \"$d/$c/$g.allow\"\nrmdir \"$d/$c\" 2>/dev/null || true\n")
		}
	}
	if kubeconfig != "" {
		eof := heredocEnd()
		fmt.Fprintf(&b, "cat > \"$d/$c/.$g.kubeconfig.tmp\" <<'%s'\n%s%s\nchmod 600 \"$d/$c/.$g.kubeconfig.tmp\"\nmv -f \"$d/$c/.$g.kubeconfig.tmp\" \"$d/$c/$g.kubeconfig\"\n",
			eof, kubeconfig, eof)
	}
	b.WriteString(regenerate)
	return b.String(), nil
}

// checkServer: the PID in pidFile must be a running spire-server (its executable, not a
// name it gives itself), else nothing changes: a stale or wrong file would signal another
// process, and the server would never read its new configuration.
const checkServer = `pid=$(cat "$pidfile" 2>/dev/null || true)
case "$pid" in ''|*[!0-9]*) echo "spire node: $pidfile holds no PID" >&2; exit 1 ;; esac
exe=$(readlink "/proc/$pid/exe" 2>/dev/null || true)
case "${exe##*/}" in
  spire-server|spire-server\ *) ;;
  *) echo "spire node: PID $pid of $pidfile is not a spire-server (its executable: ${exe:-none, or not this user's})" >&2; exit 1 ;;
esac
`

// regenerate writes k8s_psat.hcl from every cluster's files: the per-deployment ones and
// the layout before them; a name that is not what slipway writes (a cluster, a deployment,
// an account) is left out, never passed on. When the file changes the server gets SIGUSR1,
// and the script waits until the server's log (its stderr, when that is a file) says it
// read it again.
const regenerate = `tmp="$conf/.k8s_psat.hcl.tmp"
podlabel='` + spec.LabelSpirePod + `'
clusters=$(for x in "$d"/*; do
  [ -e "$x" ] || continue
  n=${x##*/}
  case "$n" in *.kubeconfig) n=${n%.kubeconfig} ;; *.allow) n=${n%.allow} ;; esac
  case "$n" in ''|*[!a-z0-9-]*) continue ;; esac
  printf '%s\n' "$n"
done | sort -u)
{
  echo 'clusters = {'
  for n in $clusters; do
    case "$n" in ''|*[!a-z0-9-]*) continue ;; esac
    k=''
    for f in "$d/$n"/*.kubeconfig; do
      [ -f "$f" ] || continue
      case "${f##*/}" in *[!a-z0-9.-]*) continue ;; esac
      k=$f; break
    done
    if [ -z "$k" ] && [ -f "$d/$n.kubeconfig" ]; then k="$d/$n.kubeconfig"; fi
    [ -n "$k" ] || continue
    printf '  "%s" = {\n    service_account_allow_list = [' "$n"
    for f in "$d/$n"/*.allow/* "$d/$n.allow"/*; do
      [ -e "$f" ] || continue
      a=${f##*/}
      case "$a" in *[!a-z0-9.:-]*) continue ;; esac
      printf '%s\n' "$a"
    done | sort -u | { sep=''; while IFS= read -r a; do printf '%s"%s"' "$sep" "$a"; sep=', '; done; }
    printf ']\n    audience = ["spire-server"]\n    allowed_pod_label_keys = ["%s"]\n    kube_config_file = "%s"\n  }\n' "$podlabel" "$k"
  done
  echo '}'
} > "$tmp"
chmod 644 "$tmp"
if [ -f "$conf/k8s_psat.hcl" ] && cmp -s "$tmp" "$conf/k8s_psat.hcl"; then
  rm -f "$tmp"
  echo 'k8s_psat: unchanged'
  exit 0
fi
log="/proc/$pid/fd/2"
before=-1
if [ -f "$log" ]; then before=$(wc -c < "$log"); fi
mv -f "$tmp" "$conf/k8s_psat.hcl"
kill -USR1 "$pid"
if [ "$before" -lt 0 ]; then
  echo 'k8s_psat: signalled; the server logs to no file, so its reconfiguration is not checked'
  exit 0
fi
i=0
while :; do
  new=$(tail -c +$((before + 1)) "$log" 2>/dev/null || true)
  if printf '%s\n' "$new" | grep -i 'reconfigur' | grep -qi -e 'fail' -e 'error'; then
    echo "spire node: spire-server (PID $pid) did not take the new k8s_psat.hcl: $(printf '%s\n' "$new" | grep -i 'reconfigur' | tail -n 1)" >&2
    exit 1
  fi
  if printf '%s\n' "$new" | grep -qi 'reconfigured'; then
    echo 'k8s_psat: reconfigured'
    exit 0
  fi
  i=$((i+1))
  [ "$i" -lt 100 ] || { echo "spire node: spire-server (PID $pid) logged no reconfiguration within 20 s of SIGUSR1" >&2; exit 1; }
  sleep 0.2
done
`
