package cli

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

func TestPlanHelpOutFlag(t *testing.T) {
	root := NewRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"plan", "--help"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	var line string
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.Contains(l, "--out ") {
			line = l
		}
	}
	if !regexp.MustCompile(`^\s+--out FILE\s{2,}save the plan`).MatchString(line) {
		t.Errorf("plan --help: the --out line is %q, want `--out FILE  save the plan …`", line)
	}
}
