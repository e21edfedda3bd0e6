package testkit

import (
	"bufio"
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// StartHelper starts cmd, a helper process (the test binary run again, say), and returns its
// first line on stdout without prefix, once it printed it: the helper says so when it is
// ready (holds a lock, say). The helper is killed when the test ends. When the line does not
// come, the test fails with what the helper wrote on stderr, if cmd.Stderr can say it.
func StartHelper(t testing.TB, cmd *exec.Cmd, prefix string) string {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), prefix)
	if err != nil || !ok {
		stderr := ""
		if s, ok := cmd.Stderr.(fmt.Stringer); ok {
			stderr = "; stderr: " + s.String()
		}
		t.Fatalf("helper: %q, %v%s", line, err, stderr)
	}
	return rest
}
