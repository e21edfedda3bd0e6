package e2e

// Helpers of the SPIRE tests on the real node (issue 37): the group file of nodes that run
// spire-agent from the dev environment's agent image, the server read through its admin API,
// and the spire node's files read over the dev environment's paths.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	agentv1 "github.com/spiffe/spire-api-sdk/proto/spire/api/server/agent/v1"
	entryv1 "github.com/spiffe/spire-api-sdk/proto/spire/api/server/entry/v1"
	"google.golang.org/grpc"

	"slipway.dev/slipway/internal/devcluster"
	"slipway.dev/slipway/internal/devcluster/devtest"
	"slipway.dev/slipway/internal/engine/spire"
	"slipway.dev/slipway/internal/spec"
)

// spireAgentScript is /etc/spire/agent in the nodes' image. `agent run` is the node's
// command: its own agent, configured from the environment slipway gives the container, its
// log in /tmp/spire/node/log; the container stays up after the agent ends, so that a test
// reads why. `agent try NAME CLUSTER TOKEN` runs one more agent (data and socket of its own
// under /tmp/spire/NAME) that presents TOKEN for CLUSTER, until it attests, crashes or
// fails an attestation on the server's answer (90 s at most), and prints its log. A failure
// to reach the server (gRPC Unavailable: once in a loaded run its connection timed out) is
// no answer: the agent tries again by itself, and the test asserts the server's reason.
const spireAgentScript = `#!/bin/sh
set -u
conf() { # name cluster token
  d=/tmp/spire/$1
  mkdir -p "$d/data"
  cat > "$d/agent.conf" <<EOF
agent {
  data_dir = "$d/data"
  log_level = "INFO"
  server_address = "$SLIPWAY_SPIRE_SERVER_ADDRESS"
  server_port = "$SLIPWAY_SPIRE_SERVER_PORT"
  socket_path = "$d/api.sock"
  trust_bundle_path = "$SLIPWAY_SPIRE_BUNDLE"
  trust_domain = "$SLIPWAY_SPIRE_TRUST_DOMAIN"
  experimental { sync_interval = "1s" }
}
plugins {
  NodeAttestor "k8s_psat" { plugin_data { cluster = "$2" token_path = "$3" } }
  KeyManager "memory" { plugin_data {} }
  WorkloadAttestor "unix" { plugin_data {} }
}
EOF
}
case "$1" in
run)
  conf node "$SLIPWAY_SPIRE_CLUSTER" "$SLIPWAY_SPIRE_TOKEN"
  /usr/bin/spire-agent run -config /tmp/spire/node/agent.conf 2>&1 | tee /tmp/spire/node/log
  echo "spire-agent exited" | tee -a /tmp/spire/node/log
  exec sleep 2147483647
  ;;
try)
  conf "$2" "$3" "$4"
  log=/tmp/spire/$2/log
  /usr/bin/spire-agent run -config "/tmp/spire/$2/agent.conf" > "$log" 2>&1 &
  pid=$!
  i=0
  while [ "$i" -lt 90 ] && kill -0 "$pid" 2>/dev/null && ! grep -q 'Node attestation was successful' "$log" &&
    ! grep 'Failed to retrieve attestation result' "$log" | grep -q -v 'code = Unavailable'; do
    sleep 1; i=$((i+1))
  done
  kill "$pid" 2>/dev/null
  cat "$log"
  ;;
esac
`

// spireSocket is the node agent's Workload API socket.
const spireSocket = "/tmp/spire/node/api.sock"

// spireNodes are the nodes' settings every node of the SPIRE groups shares: the agent image
// with the script on top, the agent as the command, ready when the agent is healthy (it is
// attested), a stop that does not wait on the shell.
const spireDefaults = `defaults:
  image:
    base: {{AGENT_IMAGE}}
    add: [{src: agent, dst: /etc/spire/agent}]
    command: [/bin/sh, /etc/spire/agent, run]
  init: none
  readiness: {exec: [/usr/bin/spire-agent, healthcheck, -socketPath, ` + spireSocket + `]}
  rolloutTimeout: 2m
  stopGracePeriod: 1s
`

// spireSection is the group file's spire: for the dev environment's server.
const spireSection = `spire:
  server: {{SPIRE_ADDR}}
  trustDomain: ` + devcluster.SpireTrustDomain + `
  ssh: {{SPIRE_SSH}}
  hostKey: "{{SPIRE_HOST_KEY}}"
  configDir: {{SPIRE_CONFIG_DIR}}
`

// spireGroup is a group of nodes (each a block with its placement) with spire:.
func spireGroup(nodes string) string {
	return "group: {{GROUP}}\n" + spireDefaults + "nodes:\n" + nodes + spireSection
}

// spireTest is one group with spire: on the dev environment, and everything its runs printed.
type spireTest struct {
	*Group
	s       *devcluster.Spire
	cluster string // the group's cluster name on the server
	outputs []Result
}

// newSpireGroup is NewRealGroup for a group with spire: against the dev environment's SPIRE
// server (dev up --spire), with the credentials in the binary's environment and the API
// server as the spire node reaches it.
func newSpireGroup(t *testing.T, prefix, tmpl string) (*spireTest, string) {
	t.Helper()
	env, s := devtest.Spire(t)
	g, node := NewRealGroup(t, prefix, tmpl)
	g.WriteFile("agent", spireAgentScript)
	st := &spireTest{Group: g, s: s}
	st.writeGroup(tmpl)
	host, _, err := g.Kube.APIServer()
	if err != nil {
		t.Fatal(err)
	}
	g.WithEnv(spec.EnvSpireAdminCert+"="+s.AdminCert, spec.EnvSpireAdminKey+"="+s.AdminKey,
		spec.EnvSpireTrustBundle+"="+s.Bundle, spec.EnvSSHPrivateKey+"="+s.SSHKey, spec.EnvSpireAPIServer+"="+host)
	uid, err := g.Kube.KubeSystemUID(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	st.cluster = spec.SpireCluster(uid, g.Name)
	t.Cleanup(func() {
		// A failed test's group would leave its kubeconfig, allow list and entries on the
		// shared server: destroy retires them (the test's log says what failed).
		if t.Failed() {
			r := g.Run("destroy", "--yes")
			t.Logf("destroy after the failure: exit %d", r.Code)
		}
	})
	if !strings.HasPrefix(s.AgentImage, env.Registry+"/") {
		t.Fatalf("agent image %s is not in the dev registry %s", s.AgentImage, env.Registry)
	}
	return st, node
}

// writeGroup writes the group file from tmpl: {{GROUP}}, {{REAL}} and the SPIRE values.
func (st *spireTest) writeGroup(tmpl string) {
	st.t.Helper()
	s := st.s
	st.realWriteGroup(strings.NewReplacer(
		"{{AGENT_IMAGE}}", "${K8S_REGISTRY}/"+strings.TrimPrefix(s.AgentImage, st.Env.Registry+"/"),
		"{{SPIRE_ADDR}}", s.Addr, "{{SPIRE_SSH}}", s.SSH, "{{SPIRE_HOST_KEY}}", s.HostKey,
		"{{SPIRE_CONFIG_DIR}}", s.ConfigDir).Replace(tmpl))
}

// run runs the binary and keeps what it printed (the secrets check reads it all).
func (st *spireTest) run(code int, args ...string) Result {
	st.t.Helper()
	r := st.Run(args...)
	st.outputs = append(st.outputs, r)
	if r.Code != code {
		st.t.Fatalf("slipway %s: want exit %d, got %s", strings.Join(args, " "), code, r)
	}
	return r
}

// hostID is the SPIFFE ID slipway gives node's host entry.
func (st *spireTest) hostID(node string) string {
	return spire.HostID(devcluster.SpireTrustDomain, st.cluster, node)
}

// fetch is `spire-agent api fetch x509` in pod's node container, over its agent's socket:
// the SPIFFE IDs of the SVIDs the agent hands root there, sorted, once it hands any (nil
// and the reason after a minute).
func (st *spireTest) fetch(pod string) []string {
	st.t.Helper()
	var ids []string
	devtest.WaitFor(st.t, time.Minute, "pod "+pod+": an X.509-SVID from its agent", func() (bool, string) {
		out, ok := st.execIn(pod, "node", "/usr/bin/spire-agent", "api", "fetch", "x509", "-socketPath", spireSocket)
		if !ok {
			log, _ := st.execIn(pod, "node", "tail", "-n", "5", "/tmp/spire/node/log")
			return false, out + "; agent log: " + log
		}
		ids = nil
		for _, l := range strings.Split(out, "\n") {
			if id, found := strings.CutPrefix(l, "SPIFFE ID:"); found {
				ids = append(ids, strings.TrimSpace(id))
			}
		}
		return len(ids) > 0, out
	})
	slices.Sort(ids)
	return ids
}

// execStdin runs command in pod's node container with stdin (a token never goes in an
// argument, not even a test's), and returns its stdout.
func (g *Group) execStdin(pod, stdin string, command ...string) string {
	g.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := append([]string{"--kubeconfig", g.Env.Kubeconfig, "-n", g.Name, "exec", "-i", pod, "-c", "node", "--"}, command...)
	cmd := exec.CommandContext(ctx, g.Env.Kubectl(), args...)
	var out, errb bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &out, &errb
	if err := cmd.Run(); err != nil {
		g.t.Fatalf("kubectl exec %s -- %s: %v\n%s%s", pod, strings.Join(command, " "), err, out.String(), errb.String())
	}
	return out.String()
}

// spireAdmin is the dev server's registration and agent APIs, as its admin.
type spireAdmin struct {
	entryAPI entryv1.EntryClient
	agentAPI agentv1.AgentClient
}

func newSpireAdmin(t *testing.T, s *devcluster.Spire) *spireAdmin {
	t.Helper()
	conn, err := spire.DialAdmin(s.Addr, devcluster.SpireTrustDomain, s.AdminCert, s.AdminKey, s.Bundle)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &spireAdmin{entryAPI: entryv1.NewEntryClient(conn), agentAPI: agentv1.NewAgentClient(conn)}
}

// entries are the server's entries of cluster (their IDs start slipway.<cluster>.), as
// "id spiffeID parent=… rev=N", sorted: a second apply must leave each line as it was.
func (a *spireAdmin) entries(t *testing.T, cluster string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []string
	page := ""
	for {
		r, err := a.entryAPI.ListEntries(ctx, &entryv1.ListEntriesRequest{PageToken: page}, grpc.WaitForReady(true))
		if err != nil {
			t.Fatalf("spire server: list entries: %v", err)
		}
		for _, e := range r.Entries {
			if strings.HasPrefix(e.Id, "slipway."+cluster+".") {
				out = append(out, e.Id+" spiffe://"+e.SpiffeId.TrustDomain+e.SpiffeId.Path+
					" parent=spiffe://"+e.ParentId.TrustDomain+e.ParentId.Path+" rev="+strconv.FormatInt(e.RevisionNumber, 10))
			}
		}
		if page = r.NextPageToken; page == "" {
			break
		}
	}
	slices.Sort(out)
	return out
}

// agents are the server's attested agents of cluster, each its ID and k8s_psat selectors
// ("agent_sa:node-a", "agent_pod_uid:…").
func (a *spireAdmin) agents(t *testing.T, cluster string) map[string][]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := a.agentAPI.ListAgents(ctx, &agentv1.ListAgentsRequest{Filter: &agentv1.ListAgentsRequest_Filter{ByAttestationType: "k8s_psat"}}, grpc.WaitForReady(true))
	if err != nil {
		t.Fatalf("spire server: list agents: %v", err)
	}
	out := map[string][]string{}
	prefix := spire.AgentPath(cluster)
	for _, ag := range r.Agents {
		if !strings.HasPrefix(ag.Id.Path, prefix) {
			continue
		}
		var sel []string
		for _, s := range ag.Selectors {
			sel = append(sel, s.Value)
		}
		slices.Sort(sel)
		out[ag.Id.Path] = sel
	}
	return out
}

// spireFiles are the spire node's files of the lane: each file of k8s_psat.d and k8s_psat.hcl
// (relative name → size, mtime and sha256), read over the dev environment's path.
func spireFiles(t *testing.T, configDir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range []string{"k8s_psat.hcl", "k8s_psat.d"} {
		err := filepath.Walk(filepath.Join(configDir, p), func(path string, fi os.FileInfo, err error) error {
			if err != nil || fi.IsDir() {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			rel, _ := filepath.Rel(configDir, path)
			out[rel] = fi.ModTime().UTC().Format(time.RFC3339Nano) + " " + hex.EncodeToString(sum[:8])
			return nil
		})
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	return out
}

// cmdlines samples the command lines of this machine's processes until stop is called, which
// returns every distinct one seen: a secret in an argument would be in one of them.
func cmdlines() (stop func() []string) {
	seen := map[string]bool{}
	var mu sync.Mutex
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			entries, _ := os.ReadDir("/proc")
			for _, e := range entries {
				if strings.Trim(e.Name(), "0123456789") != "" {
					continue
				}
				if b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); err == nil && len(b) > 0 {
					mu.Lock()
					seen[string(b)] = true
					mu.Unlock()
				}
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() []string {
		close(done)
		<-finished
		mu.Lock()
		defer mu.Unlock()
		out := make([]string, 0, len(seen))
		for c := range seen {
			out = append(out, strings.ReplaceAll(c, "\x00", " "))
		}
		return out
	}
}
