package spire

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/plan"
)

// Narrow stand-ins for the lane's three peers. The spire node stand-in runs the lane's real
// scripts with the local sh in a temporary directory (what sshd would run them with); the
// server and cluster stand-ins keep entries and objects in maps.

// standinServer stands in for the SPIRE registration API.
type standinServer struct {
	bundle  string
	entries map[string]plan.SpireEntryDef
	agents  map[string]bool // attested agents, by SPIFFE ID
	calls   map[string]int  // create, update, delete: how many entries each changed
}

func newStandinServer() *standinServer {
	return &standinServer{bundle: "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
		entries: map[string]plan.SpireEntryDef{}, agents: map[string]bool{}, calls: map[string]int{}}
}

func (s *standinServer) Bundle(context.Context) (string, error) { return s.bundle, nil }

func (s *standinServer) Entries(context.Context) ([]plan.SpireEntryDef, error) {
	var out []plan.SpireEntryDef
	for _, id := range slices.Sorted(func(yield func(string) bool) {
		for k := range s.entries {
			if !yield(k) {
				return
			}
		}
	}) {
		out = append(out, s.entries[id])
	}
	return out, nil
}

func (s *standinServer) CreateEntries(_ context.Context, es []plan.SpireEntryDef) error {
	for _, e := range es {
		if _, ok := s.entries[e.ID]; ok {
			return fmt.Errorf("create %s: exists", e.ID)
		}
		s.entries[e.ID] = e
		s.calls["create"]++
	}
	return nil
}

func (s *standinServer) UpdateEntries(_ context.Context, es []plan.SpireEntryDef) error {
	for _, e := range es {
		s.entries[e.ID] = e
		s.calls["update"]++
	}
	return nil
}

func (s *standinServer) DeleteEntries(_ context.Context, ids []string) error {
	for _, id := range ids {
		delete(s.entries, id)
		s.calls["delete"]++
	}
	return nil
}

func (s *standinServer) Agents(_ context.Context, cluster string) ([]string, error) {
	var out []string
	for id := range s.agents {
		if strings.HasPrefix(id, "spiffe://example.org"+AgentPath(cluster)) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out, nil
}

func (s *standinServer) EvictAgents(_ context.Context, ids []string) error {
	for _, id := range ids {
		delete(s.agents, id)
	}
	return nil
}

// standinNode stands in for the spire node: sh runs each script (from stdin) locally.
type standinNode struct {
	t       *testing.T
	scripts []string
	dir     string    // the scripts' working directory
	pid     *exec.Cmd // a process that counts SIGUSR1 in a file
}

func (n *standinNode) Run(ctx context.Context, script string) (string, error) {
	n.scripts = append(n.scripts, script)
	cmd := exec.CommandContext(ctx, "sh")
	if n.dir == "" {
		n.dir = n.t.TempDir()
	}
	cmd.Dir = n.dir // where a command a name smuggled in would leave its file
	cmd.Stdin = strings.NewReader(script)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%w: %s", err, errb.String())
	}
	return out.String(), nil
}

// standinCluster stands in for the cluster.
type standinCluster struct {
	uid          string
	nodes, pods  int
	foreignPods  []string
	rights       map[string]bool // the deployments whose ClusterRole and binding exist
	applied      int
	deleted      int
	tokens       int
	token        string
	apiServer    string
	lastAccount  string
	tokenExpires time.Duration
}

func newStandinCluster() *standinCluster {
	return &standinCluster{uid: "0b5c7a2e-1d2f-4c3b-9e8a-7f6d5c4b3a21", nodes: 3,
		rights: map[string]bool{}, token: "eyJTOKEN.secret.value",
		apiServer: "https://192.0.2.10:6443", tokenExpires: TokenLife}
}

func (c *standinCluster) KubeSystemUID(context.Context) (string, error) { return c.uid, nil }
func (c *standinCluster) SchedulableNodes(context.Context) (int, error) { return c.nodes, nil }
func (c *standinCluster) SpireAgentPods(context.Context, string) (kube.AgentPods, error) {
	return kube.AgentPods{Others: c.pods, Foreign: c.foreignPods}, nil
}
func (c *standinCluster) SpireRBAC(_ context.Context, _, deployment string) (kube.RBACState, error) {
	if !c.rights[deployment] {
		return kube.RBACState{Role: "missing", Binding: "missing"}, nil
	}
	return kube.RBACState{}, nil
}

func (c *standinCluster) ApplySpireRBAC(_ context.Context, _, deployment string) error {
	c.applied++
	c.rights[deployment] = true
	return nil
}

// DeleteSpireRBAC deletes only the deployment's rights, as kube.Client's does.
func (c *standinCluster) DeleteSpireRBAC(_ context.Context, deployment string) error {
	if c.rights[deployment] {
		c.deleted++
	}
	delete(c.rights, deployment)
	return nil
}

func (c *standinCluster) ServiceAccountToken(_ context.Context, ns, name string, _ time.Duration) (kube.AccountToken, error) {
	c.tokens++
	c.lastAccount = ns + "/" + name
	now := time.Now().UTC().Truncate(time.Second)
	return kube.AccountToken{Token: c.token, AccountUID: "5e1f-uid", Issued: now, Expires: now.Add(c.tokenExpires)}, nil
}

func (c *standinCluster) APIServer() (string, []byte, error) {
	return c.apiServer, []byte("-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n"), nil
}

// signalled starts a process that stands in for the server's PID: an executable named
// spire-server (a copy of sh) that counts SIGUSR1 in a file and logs, to its stderr (a
// file, as the dev server's), what the server logs when it read its configuration again.
func signalled(t *testing.T, dir string) (pidFile, countFile string) {
	t.Helper()
	return startStandin(t, dir, "spire-server", `level=info msg="Plugin reconfigured" plugin_name=k8s_psat`)
}

func startStandin(t *testing.T, dir, exe, logLine string) (pidFile, countFile string) {
	t.Helper()
	pidFile, countFile = filepath.Join(dir, "spire-server.pid"), filepath.Join(dir, "usr1")
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(sh)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), exe)
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(t.TempDir(), "server.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(bin, "-c", `trap 'echo x >> "$0"; echo "$2" >&2' USR1; echo $$ > "$1"; while :; do sleep 0.1; done`, countFile, pidFile, logLine)
	cmd.Stderr = logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	deadline := time.Now().Add(10 * time.Second)
	for {
		if b, err := os.ReadFile(pidFile); err == nil && len(strings.TrimSpace(string(b))) > 0 {
			return pidFile, countFile
		}
		if time.Now().After(deadline) {
			t.Fatal("the stand-in server process wrote no PID file")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// signals counts the SIGUSR1 the stand-in server got, waiting up to a deadline for want.
func signals(t *testing.T, countFile string, want int) int {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, _ := os.ReadFile(countFile)
		n := strings.Count(string(b), "x")
		if n >= want || time.Now().After(deadline) {
			return n
		}
		time.Sleep(20 * time.Millisecond)
	}
}
