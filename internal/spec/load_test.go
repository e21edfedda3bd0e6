package spec_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"

	"slipway.dev/slipway/internal/spec"
)

// root holds the paths the fixtures name: nodes/web/rootfs/ (a directory), build/sso.tar and
// build/file.txt (files).
const root = "testdata/root"

// doc joins lines into a file, so a fixture's line numbers can be read off its index + 1.
func doc(lines ...string) string { return strings.Join(lines, "\n") + "\n" }

// checkErrors parses file and wants exactly the errors want, in order, as Errors.
func checkErrors(t *testing.T, file string, want []string) {
	t.Helper()
	g, got := errorLines(t, file, root)
	if g != nil {
		t.Fatalf("Parse accepted the file: %+v", g)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

func TestLoadDefaults(t *testing.T) {
	g, err := spec.Parse("slipway.yaml", []byte(doc(
		"group: demo",
		"defaults:",
		"  rolloutTimeout: 7m",
		"  env: {TZ: UTC, LANG: C}",
		"  state: {size: 2Gi, storageClass: standard, protect: true, version: \"2\"}",
		"  resources: {requests: {cpu: 100m, memory: 1Gi}}",
		"nodes:",
		"  web:",
		"    image: {rootfs: nodes/web/rootfs}",
		"    env: {LANG: C.UTF-8, PORT: 8080}",
		"    state: {size: 5Gi, protect: false, version: 2026.1}",
		"    resources: {requests: {memory: 2Gi}}",
		"  db:",
		"    image: {archive: build/sso.tar}",
		"    rolloutTimeout: 1m",
		"    state:",
		"    roles:",
		"      r: {}",
	)), root)
	if err != nil {
		t.Fatal(err)
	}
	if got := []string{g.Nodes[0].Name, g.Nodes[1].Name}; !cmp.Equal(got, []string{"db", "web"}) {
		t.Errorf("nodes not sorted: %v", got)
	}
	web, db := g.Node("web"), g.Node("db")
	abs, _ := filepath.Abs(filepath.Join(root, "nodes/web/rootfs"))
	checks := []struct {
		name      string
		got, want any
	}{
		{"web rootfs absolute", web.Image.Rootfs, abs},
		{"web command default", web.Image.Command, []string{"/sbin/init"}},
		{"db command is the image's", db.Image.Command, []string(nil)},
		{"web rollout from defaults", web.RolloutTimeout, 7 * time.Minute},
		{"db rollout its own", db.RolloutTimeout, time.Minute},
		{"web env merged", web.Env, map[string]string{"TZ": "UTC", "LANG": "C.UTF-8", "PORT": "8080"}},
		{"web state size its own", web.State.Size.String(), "5Gi"},
		{"web storage class from defaults", web.State.StorageClass, "standard"},
		{"db null state takes defaults", db.State.Size.String(), "2Gi"},
		{"web protect its own", web.State.Protect, false},
		{"db protect from defaults", db.State.Protect, true},
		{"web state version its own, a number read as written", web.State.Version, "2026.1"},
		{"db state version from defaults", db.State.Version, "2"},
		{"web memory its own", web.Resources.Requests.Memory().String(), "2Gi"},
		{"web cpu from defaults", web.Resources.Requests.Cpu().String(), "100m"},
		{"web init default", web.Init, spec.InitSystemd},
		{"role replicas default", db.Roles[0].Replicas, int32(1)},
	}
	for _, c := range checks {
		if diff := cmp.Diff(c.want, c.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
}

func TestLoadExamples(t *testing.T) {
	t.Setenv("APP_TOKEN", "example") // examples/full's secrets read these
	t.Setenv("SSO_CLIENT_SECRET", "example")
	for f, nodes := range map[string]int{"../../examples/hello/slipway.yaml": 2, "../../examples/full/slipway.yaml": 3} {
		g, err := spec.Load(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if len(g.Nodes) != nodes {
			t.Errorf("%s: %d nodes, want %d", f, len(g.Nodes), nodes)
		}
	}
	g, _ := spec.Load("../../examples/full/slipway.yaml")
	web := g.Node("web")
	want := []spec.Port{{Protocol: spec.TCP, Number: 80}, {Protocol: spec.TCP, Number: 443}, {Protocol: spec.UDP, Number: 53}, {Protocol: spec.TCP, Number: 22}, {Protocol: spec.TCP, Number: 9100}}
	if diff := cmp.Diff(want, web.Firewall.LoadBalancerPorts()); diff != "" {
		t.Errorf("LoadBalancerPorts (-want +got):\n%s", diff)
	}
	if web.State.Size.Cmp(resource.MustParse("5Gi")) != 0 {
		t.Errorf("web state size = %s", web.State.Size.String())
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := spec.Load("testdata/nope.yaml")
	var errs spec.Errors
	if err == nil || errors.As(err, &errs) || !strings.HasPrefix(err.Error(), "group file testdata/nope.yaml: ") {
		t.Errorf("Load of a missing file = %v, want a plain error naming it", err)
	}
}

// Node finds every node of a loaded (sorted) group and of one put together unsorted.
func TestGroupNode(t *testing.T) {
	sorted := &spec.Group{Nodes: []*spec.Node{{Name: "a"}, {Name: "b"}, {Name: "c"}}}
	unsorted := &spec.Group{Nodes: []*spec.Node{{Name: "c"}, {Name: "a"}, {Name: "b"}}}
	for _, g := range []*spec.Group{sorted, unsorted} {
		for _, name := range []string{"a", "b", "c"} {
			if n := g.Node(name); n == nil || n.Name != name {
				t.Errorf("Node(%q) of %v = %v", name, g.Nodes, n)
			}
		}
		if n := g.Node("d"); n != nil {
			t.Errorf("Node(d) = %v, want nil", n)
		}
	}
}
