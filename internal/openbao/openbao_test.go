package openbao

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// standIn stands in for a server's two endpoints this package reads, with the JSON shapes
// Vault 1.14 answers (the real server is e2e's): sys/health, and a kubernetes auth role that
// only the token "reader" may read.
func standIn(t *testing.T) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v1/sys/health":
			_, _ = w.Write([]byte(`{"initialized":true,"sealed":false,"version":"1.14.8"}`))
		case r.Header.Get("X-Vault-Token") != "reader":
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"errors":["permission denied"]}`))
		case r.URL.Path == "/v1/auth/kubernetes/role/node-web":
			_, _ = w.Write([]byte(`{"data":{"audience":"openbao","bound_service_account_names":["node-web"],"bound_service_account_namespaces":["demo"],"bound_service_account_namespace_selector":"","token_policies":["node-web"]}}`))
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"errors":[]}`))
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func TestKubernetesRole(t *testing.T) {
	s := standIn(t)
	for _, tc := range []struct {
		name, token, role string
		want              *Role
		wantErr           error
	}{
		{name: "read", token: "reader", role: "node-web", want: &Role{ServiceAccounts: []string{"node-web"}, Namespaces: []string{"demo"}, Audience: "openbao", Policies: []string{"node-web"}}},
		{name: "absent", token: "reader", role: "node-api"},
		{name: "refused", token: "other", role: "node-web", wantErr: ErrForbidden},
		{name: "no token", role: "node-web", wantErr: ErrNoToken},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(s.URL, "", tc.token, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Health(context.Background()); err != nil {
				t.Fatal(err)
			}
			got, err := c.KubernetesRole(context.Background(), "kubernetes", tc.role)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("error %v, want %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("role (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTokenFromEnv(t *testing.T) {
	f := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(f, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, env, file, want string }{
		{"neither", "", "", ""},
		{"variable wins", "from-env", f, "from-env"},
		{"file", "", f, "from-file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(EnvToken, tc.env)
			t.Setenv(EnvTokenFile, tc.file)
			got, err := TokenFromEnv()
			if err != nil || got != tc.want {
				t.Errorf("TokenFromEnv() = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	t.Setenv(EnvToken, "")
	t.Setenv(EnvTokenFile, filepath.Join(t.TempDir(), "missing"))
	if _, err := TokenFromEnv(); err == nil {
		t.Error("a missing token file is no error")
	}
}
