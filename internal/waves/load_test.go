package waves

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func doc(lines ...string) []byte { return []byte(strings.Join(lines, "\n") + "\n") }

func TestParseRefused(t *testing.T) {
	tests := []struct {
		name string
		file []byte
		want []string
	}{
		{"cycle", doc(
			"groups:",
			"  - {name: a, file: a.yaml, dependsOn: [c]}",
			"  - {name: b, file: b.yaml, dependsOn: [a]}",
			"  - name: c",
			"    file: c.yaml",
			"    dependsOn:",
			"      - b",
		), []string{"waves.yaml:3: groups[1].dependsOn: dependency cycle: a -> c -> b -> a"}},
		{"missing group", doc(
			"groups:",
			"  - {name: a, file: a.yaml}",
			"  - name: b",
			"    file: b.yaml",
			"    dependsOn: [a, x]",
		), []string{`waves.yaml:5: groups[1].dependsOn: no group "x" in the file; groups: a, b`}},
		{"listed twice by name", doc(
			"groups:",
			"  - {name: a, file: a.yaml}",
			"  - {name: a, file: b.yaml}",
		), []string{"waves.yaml:3: groups[1].name: group a listed twice (first at line 2)"}},
		{"listed twice by file and target", doc(
			"groups:",
			"  - {name: a, file: shop.yaml, target: web}",
			"  - {name: b, file: ./shop.yaml, target: web}",
		), []string{"waves.yaml:3: groups[1]: group b is group a again (file " + abs("shop.yaml") + ", target web, first at line 2): one group listed twice"}},
		{"self", doc(
			"groups:",
			"  - {name: a, file: a.yaml, dependsOn: [a]}",
		), []string{"waves.yaml:2: groups[0].dependsOn: group a depends on itself"}},
		{"unknown field and missing file", doc(
			"groups:",
			"  - name: a",
			"    needs: [b]",
		), []string{
			"waves.yaml:2: groups[0]: file is required",
			"waves.yaml:3: groups[0].needs: unknown field (fields: name, file, target, state, dependsOn)",
		}},
		{"bad name and target", doc(
			"groups:",
			"  - {name: Platform, file: a.yaml, target: Web_1}",
		), []string{
			`waves.yaml:2: groups[0].name: "Platform" is not a DNS label (lowercase letters, digits and '-', starting and ending with a letter or digit, at most 63 characters)`,
			`waves.yaml:2: groups[0].target: "Web_1" is not all or an app's name (a DNS label)`,
		}},
		{"no groups", doc("groups: []"), []string{"waves.yaml:1: groups: must be a list of groups, not an empty list"}},
		{"duplicate key", doc(
			"groups:",
			"  - name: a",
			"    file: a.yaml",
			"    file: b.yaml",
		), []string{"waves.yaml:4: groups[0].file: written twice"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse("waves.yaml", tt.file)
			if err == nil {
				t.Fatalf("accepted: %+v", f)
			}
			if d := cmp.Diff(tt.want, strings.Split(err.Error(), "\n")); d != "" {
				t.Errorf("errors (-want +got):\n%s", d)
			}
		})
	}
}

func abs(p string) string { a, _ := filepath.Abs(p); return a }

func TestParseAndOrder(t *testing.T) {
	f, err := Parse("waves.yaml", doc(
		"groups:",
		"  - {name: app-a, file: apps/a.yaml, dependsOn: [config]}",
		"  - {name: config, file: config.yaml, dependsOn: [platform], state: kubernetes://states}",
		"  - {name: app-b-web, file: apps/b.yaml, target: web, dependsOn: [config]}",
		"  - {name: platform, file: platform.yaml}",
		"  - {name: tools, file: tools.yaml}",
	))
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, g := range f.Order() {
		order = append(order, g.Name)
	}
	if d := cmp.Diff([]string{"config", "app-a", "app-b-web", "platform", "tools"}, order); d == "" {
		t.Fatal("order put config before platform")
	}
	if d := cmp.Diff([]string{"platform", "config", "app-a", "app-b-web", "tools"}, order); d != "" {
		t.Errorf("order (-want +got):\n%s", d)
	}
	b := f.Group("app-b-web")
	if b.Target != "web" || b.File != abs("apps/b.yaml") || f.Group("app-a").Target != TargetAll {
		t.Errorf("app-b-web = %+v", b)
	}
	if f.Group("config").State != "kubernetes://states" {
		t.Errorf("config state %q", f.Group("config").State)
	}
	if d := cmp.Diff([]string{"app-a", "app-b-web"}, f.Dependents("config")); d != "" {
		t.Errorf("dependents (-want +got):\n%s", d)
	}
}

func TestIs(t *testing.T) {
	for data, want := range map[string]bool{
		"groups:\n  - {name: a, file: a.yaml}\n": true,
		"group: demo\nnodes: {}\n":               false,
		"group: demo\ngroups: []\n":              false,
		"- a\n":                                  false,
		"":                                       false,
	} {
		if got := Is([]byte(data)); got != want {
			t.Errorf("Is(%q) = %v, want %v", data, got, want)
		}
	}
}
