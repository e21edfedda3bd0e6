package cli

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"

	"slipway.dev/slipway/internal/image"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/testkit"
)

func TestImageJobs(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"web/rootfs", "conf"} {
		if err := os.MkdirAll(filepath.Join(dir, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"sso.tar", "conf/app.conf"} {
		if err := os.WriteFile(filepath.Join(dir, p), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	grp, err := spec.Parse("slipway.yaml", []byte(`
group: demo
nodes:
  web:
    image: {rootfs: web/rootfs}
    firewall: {served: [22, 80, udp/53]}
    roles:
      sso:
        ports: [9091]
        service: {image: {archive: sso.tar}}
      worker:
        ports: [8080]
  app:
    image:
      base: registry.example/base:1
      add: [{src: conf/app.conf, dst: /etc/app.conf}]
      command: [/bin/app]
  appliance:
    image: {archive: sso.tar}
  proxy:
    image: {rootfs: web/rootfs}
    init: none
`), dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, registry string
		want           []image.Job
	}{
		{"registry", "127.0.0.1:5000", []image.Job{
			{Name: "app", Repository: "127.0.0.1:5000/ns/app", Source: image.Source{
				Base: "registry.example/base:1", Add: []image.AddFile{{Src: filepath.Join(dir, "conf/app.conf"), Dst: "/etc/app.conf"}},
				Command: []string{"/bin/app"}, Labels: map[string]string{image.ServedLabel: ""}, StopSignal: "SIGRTMIN+3", Context: dir,
			}},
			// An archive is pushed as it is: its own stop signal counts.
			{Name: "appliance", Repository: "127.0.0.1:5000/ns/appliance", Source: image.Source{Archive: filepath.Join(dir, "sso.tar"), Context: dir}},
			{Name: "proxy", Repository: "127.0.0.1:5000/ns/proxy", Source: image.Source{
				Rootfs: filepath.Join(dir, "web/rootfs"), Command: []string{"/sbin/init"}, Labels: map[string]string{image.ServedLabel: ""}, Context: dir,
			}},
			{Name: "web", Repository: "127.0.0.1:5000/ns/web", Source: image.Source{
				Rootfs: filepath.Join(dir, "web/rootfs"), Command: []string{"/sbin/init"}, Labels: map[string]string{image.ServedLabel: "tcp/22,tcp/80,udp/53"}, StopSignal: "SIGRTMIN+3", Context: dir,
			}},
			{Name: "web-sso", Repository: "127.0.0.1:5000/ns/web-sso", Source: image.Source{Archive: filepath.Join(dir, "sso.tar"), Context: dir}},
		}},
		{"no registry", "", []image.Job{
			{Name: "app", Repository: "ns/app"}, {Name: "appliance", Repository: "ns/appliance"}, {Name: "proxy", Repository: "ns/proxy"},
			{Name: "web", Repository: "ns/web"}, {Name: "web-sso", Repository: "ns/web-sso"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := imageJobs(context.Background(), grp, tc.registry, "ns", io.Discard)
			if tc.registry == "" { // only the repositories differ
				for i := range got {
					got[i].Source = image.Source{}
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("jobs (-want +got):\n%s", diff)
			}
		})
	}
}

// TestImageJobsBaseInOwnRegistry: a base written ${K8S_REGISTRY}/… is pulled from the registry
// slipway pushes to; any other base is left as written.
func TestImageJobsBaseInOwnRegistry(t *testing.T) {
	grp, err := spec.Parse("slipway.yaml", []byte(`
group: demo
nodes:
  own: {image: {base: "${K8S_REGISTRY}/full-base/base@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}}
  other: {image: {base: registry.example/base:1}}
`), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, j := range imageJobs(context.Background(), grp, "127.0.0.1:5000", "ns", io.Discard) {
		got[j.Name] = j.Source.Base
	}
	want := map[string]string{
		"own":   "127.0.0.1:5000/full-base/base@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		"other": "registry.example/base:1",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("bases (-want +got):\n%s", diff)
	}
}

// TestImagesPushOutput is `images push`'s result on stdout: a digest a line, or with -o json
// one list (docs/json.md), `[]` when the group has no image; testdata/images-push.txt.
func TestImagesPushOutput(t *testing.T) {
	d1, err := name.NewDigest("reg.test/demo/web@sha256:" + strings.Repeat("a", 64))
	if err != nil {
		t.Fatal(err)
	}
	d2, err := name.NewDigest("reg.test/demo/web-sso@sha256:" + strings.Repeat("b", 64))
	if err != nil {
		t.Fatal(err)
	}
	results := []image.Result{
		{Name: "web", Tag: "reg.test/demo/web:c-1", Digest: d1, Pushed: true},
		{Name: "web-sso", Tag: "reg.test/demo/web-sso:c-2", Digest: d2},
	}
	var out bytes.Buffer
	for _, c := range []struct {
		results []image.Result
		asJSON  bool
	}{{results, false}, {results, true}, {nil, false}, {nil, true}} {
		if err := printPushed(&out, c.results, c.asJSON); err != nil {
			t.Fatal(err)
		}
		out.WriteString("----\n")
	}
	testkit.Golden(t, filepath.Join("testdata", "images-push.txt"), out.Bytes())
}

// TestImageJobsSecretsSidecar: a role with sidecarSecrets has the sidecar's image, of
// slipway's own programs, in <registry>/<ns>/<node>-<role>/secrets.
func TestImageJobsSecretsSidecar(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "sso.tar"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	grp, err := spec.Parse("slipway.yaml", []byte(`
group: demo
nodes:
  web:
    image: {archive: sso.tar}
    secretsFrom: {openbao: {address: "http://bao:8200"}}
    roles:
      sso:
        service: {image: {archive: sso.tar}}
        sidecarSecrets: {pw: {path: web/db, key: password}}
`), dir)
	if err != nil {
		t.Fatal(err)
	}
	jobs := imageJobs(context.Background(), grp, "127.0.0.1:5000", "ns", io.Discard)
	last := jobs[len(jobs)-1]
	if last.Name != "web-sso/secrets" || last.Repository != "127.0.0.1:5000/ns/web-sso/secrets" || last.Source.Binaries == nil {
		t.Fatalf("last job %+v, want the sidecar's", last)
	}
	b := last.Source.Binaries
	// This test's binary is built from the source without -trimpath: without programs built
	// in, it builds them from there (secretsbin), as `go run ./cmd/slipway` does.
	if b.Path != "/slipway-secrets" || b.Missing != nil || len(b.ByPlatform) != 2 {
		t.Errorf("sidecar source: path %s, %d platforms, missing %v", b.Path, len(b.ByPlatform), b.Missing)
	}
}
