package devcluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestApplyPatch(t *testing.T) {
	const orig = "package a\n\nfunc A() {\n\tpanic(1)\n}\n\nfunc B() {}\n"
	tests := []struct {
		name    string
		src     string
		diff    string
		want    string
		wantErr string
	}{
		{
			name: "replace and append",
			src:  orig,
			diff: `diff -ru a.orig/a.go a/a.go
--- a.orig/a.go	2026-12-05 04:03:03.756743321 +0000
+++ a/a.go	2026-12-05 04:03:04.100449240 +0000
@@ -3,3 +3,3 @@
 func A() {
-	panic(1)
+	// no panic
 }
@@ -7,1 +7,3 @@
 func B() {}
+
+func C() {}
`,
			want: "package a\n\nfunc A() {\n\t// no panic\n}\n\nfunc B() {}\n\nfunc C() {}\n",
		},
		{
			name: "context differs: refused, no fuzz",
			src:  strings.Replace(orig, "panic(1)", "panic(2)", 1),
			diff: `--- a.orig/a.go
+++ a/a.go
@@ -3,3 +3,3 @@
 func A() {
-	panic(1)
+	// no panic
 }
`,
			wantErr: `line 4 is "\tpanic(2)", the patch expects "\tpanic(1)"`,
		},
		{
			name: "hunk at another line: refused, no offset",
			src:  "// header\n" + orig,
			diff: `--- a.orig/a.go
+++ a/a.go
@@ -3,3 +3,3 @@
 func A() {
-	panic(1)
+	// no panic
 }
`,
			wantErr: "hunk at line 3",
		},
		{
			name:    "truncated hunk",
			src:     orig,
			diff:    "--- a.orig/a.go\n+++ a/a.go\n@@ -3,3 +3,3 @@\n func A() {\n",
			wantErr: "hunk ends early",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "a.go")
			if err := os.WriteFile(path, []byte(tt.src), 0o644); err != nil {
				t.Fatal(err)
			}
			err := applyPatch(dir, []byte(tt.diff))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("applyPatch: got error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, string(got)); d != "" {
				t.Errorf("patched file (-want +got):\n%s", d)
			}
		})
	}
}
