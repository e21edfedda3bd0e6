// Package internal_test holds the checks of internal/ as a whole: the import table of each
// package (arch_test.go), the constants written once (onedef_test.go) and the length of its
// functions (funcsize_test.go) and of the files of internal/, e2e/ and cmd/ (filesize_test.go).
package internal_test

import (
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "slipway.dev/slipway/internal/"

// allowed is, per package under internal/, the packages of internal/ it may import (test files
// aside). The layering of DEVELOPERS.md: the pure core (spec, render, plan, status) and the
// leaf event compute; ui prints what they hold and reaches neither the engine, the state nor
// kube; the engine runs and never reaches cli or ui; cli wires. A package missing here fails,
// so a new one is placed on purpose.
var allowed = map[string][]string{
	"event":    {},
	"spec":     {"realpath", "secretsconf"},         // secretsconf: the sidecar's file-name limit, checked at load
	"render":   {"parallel", "secretsconf", "spec"}, // parallel: a pure leaf, the one parallelism helper
	"plan":     {"jsontag", "quote", "spec"},
	"status":   {"event", "quote"},
	"ui":       {"event", "plan", "quote", "spec", "status"},
	"parallel": {},
	"heap":     {}, // the process's huge pages: main asks before anything runs
	"netaddr":  {}, // whether an address is on this machine: image and kube ask it alike
	"realpath": {}, // links resolved once per directory: spec's load and image's build alike
	"jsontag":  {}, // a struct's fields as JSON keys: plan's and kube's reflective walkers alike
	"quote":    {}, // text from the cluster made safe for a terminal: status, ui, plan, kube, engine, state, main
	"redact":   {}, // credentials in URLs hidden: image pushes and the HTTP state backend alike
	"image":    {"event", "netaddr", "parallel", "realpath", "redact"},
	"kube":     {"jsontag", "netaddr", "plan", "quote", "spec"}, // plan.Key names the objects it lists and deletes; spec the labels
	"state":    {"event", "kube", "quote", "redact", "spec"},
	"engine":   {"dns", "engine/central", "engine/dryrun", "engine/lane", "engine/migrate", "engine/nsmove", "engine/publish", "engine/roles", "engine/rollout", "engine/secrets", "engine/sharedreads", "engine/spire", "event", "image", "kube", "openbao", "parallel", "plan", "quote", "render", "spec", "state", "status"},
	// The engine's kit (issue 45): the contract every lane implements and what the root
	// lends a lane; it reaches no lane and not the root.
	"engine/lane": {"event", "image", "kube", "plan", "quote", "render", "spec", "state", "status"},
	// The lane of state migrations (SPEC §6a): state versions, copies, the remove-copy step.
	"engine/migrate": {"engine/lane", "event", "kube", "plan", "render", "spec", "state"},
	// The lane of a node's roles (FR-006a): stop-role, await-ready, start-role.
	"engine/roles": {"engine/lane", "event", "plan", "render", "spec", "state", "status"},
	// The lane of --move-namespace.
	"engine/nsmove": {"engine/lane", "event", "plan", "spec", "state"},
	// The secrets lane: the check of the secrets servers (FR-004e), the Secrets' values and the
	// group's secret key (SPEC §3a).
	"engine/secrets": {"engine/lane", "openbao", "parallel", "plan", "spec", "state"},
	// Helpers of the root without steps: the dry runs of a plan, a wave run's shared reads.
	"engine/dryrun":      {"kube", "parallel", "plan", "spec"},
	"engine/sharedreads": {"engine/lane", "kube", "plan", "spec"},
	// The stand-ins the engine's and its lanes' tests share.
	"engine/enginetest": {"dns", "kube", "plan", "render", "spec", "state"},
	// The rollout lane (SPEC §6 steps 3–6): objects, claims, Deployments, rollouts, rollbacks.
	"engine/rollout": {"engine/lane", "event", "kube", "plan", "render", "spec", "state", "status"},
	// The publishing lane (SPEC §7): the Gateway, addresses and DNS records.
	"engine/publish": {"dns", "engine/lane", "event", "kube", "plan", "quote", "spec", "state", "status"},
	"devcluster":     {},
	"dns":            {}, // the DNS server of SPEC §7: miekg/dns, no slipway package
	// Test support: its counting proxy reaches the dev API server through kube's transport.
	"devcluster/devtest": {"devcluster", "kube"},
	"testkit":            {}, // test support without a cluster: golden files, helper processes
	"image/imagetest":    {}, // test support: a rootfs and a layer's tar entries, for image's tests and those of e2e/image
	"render/rendertest":  {"render", "spec"},
	// Test support: the state backends' conformance suite and lock-holding helper process, for
	// state's tests and those of e2e/state.
	"state/statetest": {"devcluster/devtest", "event", "kube", "state", "testkit"}, // test support: render's stable input, for its tests and those of e2e/render
	"waves":           {"event", "spec", "status"},                                 // a waves file, its order and its health gate: pure
	// cli quotes the few lines it prints itself (a state listing, a notice, a prompt) as ui does.
	"cli": {"devcluster", "engine", "event", "image", "kube", "parallel", "plan", "quote", "render", "secretsbin", "secretsconf", "spec", "state", "ui", "waves"},
	// The secrets sidecar (FR-004e): its configuration (pure, shared with render), its program
	// (cmd/slipway-secrets), and the programs embedded for the sidecar image.
	"secretsconf": {},
	"sidecar":     {"openbao", "secretsconf"},
	// What slipway itself asks a secrets server (plan's check), and the client parts the
	// sidecar shares: OpenBao's client library, no slipway package.
	"openbao":        {},
	"secretsbin":     {},
	"secretsbin/gen": {"secretsbin"}, // go generate's builder of the embedded programs
	// The SPIRE lane (FR-015 to FR-017): its server and spire node, the cluster through kube.
	"engine/spire": {"engine/lane", "event", "kube", "plan", "render", "spec", "state"},
	// The central lane (issue 44): PostgreSQL through pgx, OpenBao through its client, S3 through minio-go; no
	// other lane imports it.
	"engine/central": {"engine/lane", "event", "openbao", "plan", "spec", "state"},
}

// clientGo are the packages that may import client-go directly; state may reach it only
// through kube, from the files of its Kubernetes backend (kubernetes*.go).
var clientGo = []string{"kube"}

// pure are the packages that compute or print and never talk to a cluster: they must not
// depend on client-go, even through another package.
var pure = []string{"event", "jsontag", "parallel", "realpath", "spec", "render", "plan", "status", "ui", "waves", "secretsconf", "redact", "quote"}

func goCmd(t *testing.T, args ...string) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list dependencies: %v", err)
	}
	out, err := exec.Command(gobin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func isClientGo(path string) bool {
	return path == "k8s.io/client-go" || strings.HasPrefix(path, "k8s.io/client-go/")
}

func TestImports(t *testing.T) {
	// -f over ./... lists every package under internal/ with its direct imports; test files
	// are not included, so e2e-style tests may use anything.
	out := goCmd(t, "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...")
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		fields := strings.Fields(line)
		pkg, ok := strings.CutPrefix(fields[0], module)
		if !ok {
			continue // internal itself: tests only
		}
		seen[pkg] = true
		t.Run(pkg, func(t *testing.T) {
			may, known := allowed[pkg]
			if !known {
				t.Fatalf("internal/%s is not in the import table of arch_test.go: add it with the packages it may import", pkg)
			}
			for _, imp := range fields[1:] {
				if dep, ok := strings.CutPrefix(imp, module); ok && !slices.Contains(may, dep) {
					t.Errorf("internal/%s imports internal/%s: not allowed (it may import %v)", pkg, dep, may)
				}
				if isClientGo(imp) && !slices.Contains(clientGo, pkg) {
					t.Errorf("internal/%s imports %s: only %v may import client-go", pkg, imp, clientGo)
				}
			}
		})
	}
	for pkg := range allowed {
		if !seen[pkg] {
			t.Errorf("internal/%s is in the import table but does not exist", pkg)
		}
	}
}

// TestStateReachesKubeOnlyFromItsBackend: the file, HTTP and lock code of internal/state does
// not link the cluster client; only its Kubernetes backend does.
func TestStateReachesKubeOnlyFromItsBackend(t *testing.T) {
	files := strings.Fields(goCmd(t, "list", "-f", "{{join .GoFiles \" \"}}", "./state"))
	if len(files) == 0 {
		t.Fatal("internal/state: no Go files listed")
	}
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, filepath.Join("state", name), nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, is := range f.Imports {
			imp, _ := strconv.Unquote(is.Path.Value)
			if (imp == module+"kube" || isClientGo(imp)) && !strings.HasPrefix(name, "kubernetes") {
				t.Errorf("internal/state/%s imports %s: only the Kubernetes backend (kubernetes*.go) may", name, imp)
			}
		}
	}
}

func TestPureCoreHasNoClientGo(t *testing.T) {
	for _, p := range pure {
		t.Run(p, func(t *testing.T) {
			if _, err := os.Stat(p); err != nil {
				t.Fatalf("internal/%s: %v", p, err)
			}
			// -deps lists every package p imports, directly or not.
			for _, dep := range strings.Fields(goCmd(t, "list", "-deps", "-f", "{{.ImportPath}}", "./"+filepath.ToSlash(p))) {
				if isClientGo(dep) {
					t.Errorf("internal/%s depends on %s: only internal/kube may import client-go", p, dep)
				}
				for _, rim := range []string{"kube", "state", "engine"} {
					if dep == module+rim {
						t.Errorf("internal/%s depends on internal/%s", p, rim)
					}
				}
			}
		})
	}
}

// TestLanesStayApart: the engine's lanes sit between its kit and its root (issue 45). The kit
// (engine/lane) imports no part of the engine; a lane imports the kit and no other lane, and
// never the root; only the root composes them. Test support (engine/enginetest) is no lane.
func TestLanesStayApart(t *testing.T) {
	out := goCmd(t, "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./engine/...")
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], module)
		if pkg == "engine" {
			continue
		}
		for _, imp := range fields[1:] {
			dep, ok := strings.CutPrefix(imp, module)
			if !ok || (dep != "engine" && !strings.HasPrefix(dep, "engine/")) {
				continue
			}
			if pkg == "engine/lane" || dep != "engine/lane" {
				t.Errorf("internal/%s imports internal/%s: the kit imports no part of the engine, and a lane only the kit", pkg, dep)
			}
		}
	}
}
