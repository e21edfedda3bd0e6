package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"slipway.dev/slipway/internal/spec"
)

// Each example init writes loads as it is, with the group named after the directory.
func TestInitValidates(t *testing.T) {
	tests := []struct {
		example, dir, group string
		nodes               int
	}{
		{"one", "My App", "my-app", 1},
		{"full", "2nd-full", "nd-full", 1},
	}
	for _, tt := range tests {
		t.Run(tt.example, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), tt.dir)
			var out, errb bytes.Buffer
			if err := runInit(dir, tt.example, "", &out, &errb); err != nil {
				t.Fatal(err)
			}
			g, err := spec.Load(filepath.Join(dir, "slipway.yaml"))
			if err != nil {
				t.Fatalf("the written file does not load:\n%v", err)
			}
			if g.Name != tt.group || len(g.Nodes) != tt.nodes {
				t.Errorf("group %q with %d nodes, want %q with %d", g.Name, len(g.Nodes), tt.group, tt.nodes)
			}
			if !strings.Contains(out.String(), filepath.Join(dir, "slipway.yaml")+"\n") {
				t.Errorf("stdout %q does not list slipway.yaml", out.String())
			}
		})
	}
}

// The full example writes every field the loader accepts: a field added to the loader must be
// added to it too (a commented-out field counts: it is there to be read).
func TestInitFullHasEveryField(t *testing.T) {
	b, err := os.ReadFile("inittmpl/full/slipway.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	for _, f := range spec.Fields() {
		last := f[strings.LastIndex(f, ".")+1:]
		last = strings.TrimSuffix(last, "[]")
		if strings.HasPrefix(last, "<") {
			continue // a name the file chooses
		}
		if !regexp.MustCompile(`(^|[\s{,])` + regexp.QuoteMeta(last) + `:`).MatchString(text) {
			t.Errorf("field %s is not in the full example", f)
		}
	}
}

func TestInitRefuses(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "slipway.yaml"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, example, group, want string
	}{
		{"an existing group file", "one", "", "init: " + filepath.Join(dir, "slipway.yaml") + " exists; init writes a new group file only (another DIR, or remove it)"},
		{"an unknown example", "most", "", `--example "most": want one of one, full`},
		{"a group that is not a DNS label", "one", "My_App", `--group "My_App": not a DNS label (lowercase letters, digits and '-', at most 63)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := runInit(dir, tt.example, tt.group, &out, &out)
			if err == nil {
				t.Fatal("no error")
			}
			if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "slipway.yaml")); string(b) != "mine\n" {
		t.Errorf("slipway.yaml was changed: %q", b)
	}
}

func TestGroupName(t *testing.T) {
	for in, want := range map[string]string{
		"My App": "my-app", "web2": "web2", "2nd": "nd", "...": "demo", "/": "demo",
		strings.Repeat("a", 70): strings.Repeat("a", 63),
	} {
		if got := groupName(in); got != want {
			t.Errorf("groupName(%q) = %q, want %q", in, got, want)
		}
	}
}
