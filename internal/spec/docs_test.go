package spec_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"go.yaml.in/yaml/v3"

	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/waves"
)

// The user's documentation, kept true by the tests below.
const (
	docsDir = "../../docs"
	// docsRoot is what the examples' paths resolve against: nodes/web/rootfs/, build/db.tar,
	// build/sso.tar and conf/proxy.conf, the layout docs/group-file.md tells the reader to have.
	docsRoot = "testdata/docs"
)

// referenceRow is a row of the field reference: "| `nodes.<node>.image` | …".
var referenceRow = regexp.MustCompile("^\\| `([^`]+)` \\|")

// TestDocsGroupFileReference: the reference in docs/group-file.md has one row for every field
// the loader accepts, and no row for a field it does not accept.
func TestDocsGroupFileReference(t *testing.T) {
	file := filepath.Join(docsDir, "group-file.md")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]int{} // field → line
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		m := referenceRow.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		if first, dup := rows[m[1]]; dup {
			t.Errorf("%s:%d: field %s has a second row (first at line %d)", file, line, m[1], first)
		}
		rows[m[1]] = line
	}
	fields := spec.Fields()
	if len(fields) == 0 {
		t.Fatal("spec.Fields() lists no field")
	}
	for _, f := range fields {
		if _, ok := rows[f]; !ok {
			t.Errorf("%s: field %s, which the loader accepts, has no row `| `%s` | … |` in the reference", file, f, f)
		}
	}
	for f, line := range rows {
		if !slices.Contains(fields, f) {
			t.Errorf("%s:%d: the reference documents %s, which the loader does not accept", file, line, f)
		}
	}
}

// TestDocsCompleteExample: the example that says it has every field has every field.
func TestDocsCompleteExample(t *testing.T) {
	file := filepath.Join(docsDir, "group-file.md")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	const heading = "## A complete example"
	i := bytes.Index(data, []byte(heading))
	if i < 0 {
		t.Fatalf("%s: no heading %q", file, heading)
	}
	blocks, err := fences(data[i:])
	if err != nil || len(blocks) == 0 || blocks[0].info != "yaml" {
		t.Fatalf("%s: no yaml example under %q (%v)", file, heading, err)
	}
	for _, f := range unsetFields(t, []byte(blocks[0].body)) {
		t.Errorf("%s: the complete example does not set %s", file, f)
	}
}

// unsetFields are the fields of spec.Fields that the group file data does not write.
func unsetFields(t *testing.T, data []byte) []string {
	t.Helper()
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, f := range spec.Fields() {
		known[f] = false
	}
	markFields(root.Content[0], "", known)
	var out []string
	for _, f := range spec.Fields() {
		if !known[f] {
			out = append(out, f)
		}
	}
	return out
}

// markFields marks in known every field path the YAML node n at path writes. A key not in
// known is a name the file chooses when its parent has a placeholder child (nodes.<node>).
func markFields(n *yaml.Node, path string, known map[string]bool) {
	switch n.Kind {
	case yaml.SequenceNode:
		for _, c := range n.Content {
			markFields(c, path+"[]", known)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			p := n.Content[i].Value
			if path != "" {
				p = path + "." + p
			}
			if _, ok := known[p]; !ok {
				p = ""
				for f := range known {
					if strings.HasPrefix(f, path+".<") && !strings.Contains(f[len(path)+1:], ".") {
						p = f
					}
				}
				if p == "" {
					continue // under a field listed once elsewhere (defaults, a service's image)
				}
			}
			known[p] = true
			markFields(n.Content[i+1], p, known)
		}
	}
}

// fence is one fenced code block of a Markdown file.
type fence struct {
	info string // the info string: yaml, text, sh, …
	line int    // line of the opening fence
	body string
}

// fences returns the fenced code blocks of md, indented ones (in a list item) included.
func fences(md []byte) ([]fence, error) {
	var out []fence
	var cur *fence
	var indent string
	sc := bufio.NewScanner(bytes.NewReader(md))
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		trimmed := strings.TrimLeft(text, " ")
		if cur == nil {
			if strings.HasPrefix(trimmed, "```") {
				indent = text[:len(text)-len(trimmed)]
				cur = &fence{info: strings.TrimSpace(strings.TrimPrefix(trimmed, "```")), line: line}
			}
			continue
		}
		if strings.TrimSpace(text) == "```" {
			out = append(out, *cur)
			cur = nil
			continue
		}
		cur.body += strings.TrimPrefix(text, indent) + "\n"
	}
	if cur != nil {
		return nil, fmt.Errorf("line %d: fence not closed", cur.line)
	}
	return out, sc.Err()
}

// TestDocsExamplesLoad: every ```yaml block of docs/ is a group file the loader accepts as it
// is. YAML that is not a group file has no place there under another yaml fence, so that no
// example escapes the check.
func TestDocsExamplesLoad(t *testing.T) {
	t.Setenv("APP_TOKEN", "docs-example") // the complete example's secrets read these
	t.Setenv("SSO_CLIENT_SECRET", "docs-example")
	publishEnv(t)
	files, err := filepath.Glob(filepath.Join(docsDir, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	examples := 0
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		blocks, err := fences(data)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, b := range blocks {
			name := fmt.Sprintf("%s:%d", filepath.Base(file), b.line)
			if b.info != "yaml" {
				if strings.HasPrefix(b.info, "yaml") || strings.HasPrefix(b.info, "yml") {
					t.Errorf("%s: a %q block: fence a group file as yaml (it is loaded by this test), anything else as text", name, b.info)
				}
				continue
			}
			examples++
			t.Run(name, func(t *testing.T) {
				if waves.Is([]byte(b.body)) { // a waves file (docs/waves.md) loads as one
					if _, err := waves.Parse(file, []byte(b.body)); err != nil {
						t.Errorf("the waves example does not load (lines of the block):\n%v", err)
					}
					return
				}
				_, err := spec.Parse(file, []byte(b.body), docsRoot)
				var errs spec.Errors
				if errors.As(err, &errs) {
					// Lines of the file, not of the block, so the message points at the doc.
					for i := range errs {
						errs[i].Line += b.line
					}
				}
				if err != nil {
					t.Errorf("the example does not load:\n%v", err)
				}
			})
		}
	}
	if examples == 0 {
		t.Errorf("no ```yaml example in %s", docsDir)
	}
}

// mdLink is a relative Markdown link: [text](target) or [text](target#anchor).
var mdLink = regexp.MustCompile(`\]\(([^)#:\s]*)(?:#([^)\s]+))?\)`)

// TestDocsLinks: every relative link of docs/ and of the README names a file that exists and,
// with #anchor, a heading of that file.
func TestDocsLinks(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(docsDir, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join(docsDir, "..", "README.md"))
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLink.FindAllStringSubmatch(string(data), -1) {
			target, anchor := m[1], m[2]
			path := file
			if target != "" {
				path = filepath.Join(filepath.Dir(file), target)
			}
			fi, err := os.Stat(path)
			if err != nil {
				t.Errorf("%s: link %s: %v", file, m[0], err)
				continue
			}
			if anchor == "" || fi.IsDir() {
				continue
			}
			if !slices.Contains(anchors(t, path), anchor) {
				t.Errorf("%s: link %s: %s has no heading with the anchor #%s", file, m[0], path, anchor)
			}
		}
	}
}

// anchors are the anchors GitHub makes of a Markdown file's headings: lowercase, spaces to
// '-', punctuation other than '-' and '_' dropped.
func anchors(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	inFence := false
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
		}
		if inFence || !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#")))
		var b strings.Builder
		for _, r := range title {
			switch {
			case r == ' ':
				b.WriteByte('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		out = append(out, b.String())
	}
	return out
}
