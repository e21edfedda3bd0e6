package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"slipway.dev/slipway/internal/testkit"
)

// TestValidateWaves is `validate` of a waves file, text and JSON (testdata/validate-waves.txt):
// a valid file; one whose group files have problems of their own (at their own lines), a
// target no node names, a group file that does not exist and two groups sharing a namespace
// (at the waves file's lines); a cycle; groups listed twice.
func TestValidateWaves(t *testing.T) {
	t.Setenv("K8S_NAMESPACE", "")
	t.Setenv("SLIPWAY_STATE", "")
	t.Setenv(deploymentIDEnv, "")
	dir := t.TempDir()
	files := map[string]string{
		"shop.yaml": "group: shop\nnodes:\n  web: {app: front, image: {base: r.example/b:1}}\n  db: {app: data, image: {base: r.example/b:1}}\n",
		"base.yaml": "group: base\nnodes:\n  dns: {image: {base: r.example/b:1}}\n",
		"bad.yaml":  "group: bad\nnodes:\n  web: {image: {base: r.example/b:1}, replicas: 2}\n",
		"copy.yaml": "group: copy\nnamespace: base\nnodes:\n  dns: {image: {base: r.example/b:1}}\n",
		"valid-waves.yaml": "groups:\n" +
			"  - {name: base, file: base.yaml}\n" +
			"  - {name: front, file: shop.yaml, target: front, dependsOn: [base]}\n" +
			"  - {name: data, file: shop.yaml, target: data, dependsOn: [base]}\n",
		"invalid-waves.yaml": "groups:\n" +
			"  - {name: base, file: base.yaml}\n" +
			"  - {name: bad, file: bad.yaml, dependsOn: [base]}\n" +
			"  - name: mail\n    file: shop.yaml\n    target: mail\n" +
			"  - {name: gone, file: gone.yaml}\n" +
			"  - {name: copy, file: copy.yaml}\n",
		"cycle-waves.yaml": "groups:\n" +
			"  - {name: a, file: base.yaml, dependsOn: [b]}\n" +
			"  - {name: b, file: shop.yaml, target: front, dependsOn: [c]}\n" +
			"  - {name: c, file: shop.yaml, target: data, dependsOn: [a]}\n",
		"twice-waves.yaml": "groups:\n" +
			"  - {name: a, file: base.yaml}\n" +
			"  - {name: b, file: shop.yaml}\n" +
			"  - {name: a, file: shop.yaml, target: data}\n" +
			"  - {name: c, file: ./shop.yaml}\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	for _, name := range []string{"valid-waves.yaml", "invalid-waves.yaml", "cycle-waves.yaml", "twice-waves.yaml"} {
		for _, args := range [][]string{{"validate"}, {"validate", "-o", "json"}} {
			stdout, stderr, err := runCLI(t, append([]string{"-f", filepath.Join(dir, name)}, args...)...)
			fmt.Fprintf(&out, "== %s %v: exit %d, error %q\n-- stdout\n%s-- stderr\n%s", name, args, ExitCode(err), fmt.Sprint(err), stdout, stderr)
		}
	}
	testkit.Golden(t, filepath.Join("testdata", "validate-waves.txt"), bytes.ReplaceAll(out.Bytes(), []byte(dir), []byte("DIR")))
}
