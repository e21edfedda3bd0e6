package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runRoot runs the command tree with args in the settings fixture, with a clean slipway
// environment plus env (KEY=VALUE), and returns its error.
func runRoot(t *testing.T, env []string, args ...string) error {
	t.Helper()
	dir, err := filepath.Abs("testdata/settings")
	if err != nil {
		t.Fatal(err)
	}
	base := map[string]string{
		// Nothing here may reach a cluster or a registry: a run that gets past its checks
		// fails fast on these instead.
		"KUBE_CONFIG_PATH": filepath.Join(dir, "no-kubeconfig"), "KUBECONFIG": "",
		"K8S_REGISTRY": "127.0.0.1:1", "REGISTRY_AUTH_FILE": "", "K8S_NAMESPACE": "",
		"SLIPWAY_STATE": "file://" + filepath.Join(t.TempDir(), "state.json"),
		"HOME":          t.TempDir(),
	}
	for k, v := range base {
		t.Setenv(k, v)
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	root := NewRoot()
	root.SetArgs(append([]string{"-f", filepath.Join(dir, "slipway.yaml")}, args...))
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetIn(strings.NewReader(""))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return root.ExecuteContext(ctx)
}

func TestSettingsRefused(t *testing.T) {
	auth := func(f string) string { p, _ := filepath.Abs("testdata/settings/auth/" + f); return p }
	tests := []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"negative timeout", nil, []string{"--timeout=-5m", "plan"}, "--timeout -5m0s: must be more than 0"},
		{"zero timeout", nil, []string{"--timeout", "0s", "plan"}, "--timeout 0s: must be more than 0"},
		{"zero parallelism", nil, []string{"--parallelism", "0", "plan"}, "--parallelism 0: must be at least 1"},
		{"negative parallelism", nil, []string{"--parallelism", "-1", "images", "push"}, "--parallelism -1: must be at least 1"},
		{"missing auth file from the environment", []string{"REGISTRY_AUTH_FILE=" + auth("missing.json")}, []string{"images", "push"},
			"registry auth file " + auth("missing.json") + " (REGISTRY_AUTH_FILE) does not exist"},
		{"missing auth file from the flag", nil, []string{"--registry-auth", auth("missing.json"), "images", "push"},
			"registry auth file " + auth("missing.json") + " (--registry-auth) does not exist"},
		{"auth file is a directory", []string{"REGISTRY_AUTH_FILE=" + auth("dir")}, []string{"images", "push"},
			"registry auth file " + auth("dir") + " (REGISTRY_AUTH_FILE) is a directory, not a docker config file"},
		{"auth not base64", []string{"REGISTRY_AUTH_FILE=" + auth("bad-base64.json")}, []string{"images", "push"},
			`registry auth file ` + auth("bad-base64.json") + ` (REGISTRY_AUTH_FILE): auths["127.0.0.1:1"].auth is not base64 (of user:password)`},
		{"auth without a colon", nil, []string{"--registry-auth", auth("no-colon.json"), "images", "push"},
			`registry auth file ` + auth("no-colon.json") + ` (--registry-auth): auths["127.0.0.1:1"].auth does not decode to user:password`},
		{"auth a number", nil, []string{"--registry-auth", auth("auth-number.json"), "images", "push"},
			`registry auth file ` + auth("auth-number.json") + ` (--registry-auth): not a docker config file: auths.auth is a JSON number, not what docker writes there`},
		{"registry with a scheme", []string{"K8S_REGISTRY=http://127.0.0.1:1"}, []string{"images", "push"},
			`K8S_REGISTRY "http://127.0.0.1:1": want host[:port][/path] without a scheme, e.g. 127.0.0.1:1`},
		{"registry flag with a scheme", nil, []string{"--registry", "https://registry.example", "plan"},
			`--registry "https://registry.example": want host[:port][/path] without a scheme, e.g. registry.example`},
		{"namespace flag not a label", nil, []string{"-n", "Bad_NS", "images", "push"},
			`namespace "Bad_NS" (from -n) is not a DNS label`},
		{"namespace variable not a label", []string{"K8S_NAMESPACE=Bad_NS"}, []string{"plan"},
			`namespace "Bad_NS" (from K8S_NAMESPACE) is not a DNS label`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := runRoot(t, tt.env, tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
			for _, secret := range []string{"secret-password", "c2VjcmV0LXBhc3N3b3Jk"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error shows a credential: %v", err)
				}
			}
		})
	}
}

// TestSettingsAccepted: the default auth file may be missing (anonymous), and a good timeout
// passes the checks: these runs get as far as the registry or the cluster.
func TestSettingsAccepted(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"default auth file missing", []string{"images", "push"}, "registry 127.0.0.1:1 unreachable"},
		{"positive timeout", []string{"--timeout", "90s", "plan"}, "no-kubeconfig"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := runRoot(t, nil, tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}
