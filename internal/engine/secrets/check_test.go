package secrets

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"slipway.dev/slipway/internal/openbao"
	"slipway.dev/slipway/internal/spec"
)

// fakeSecretsServer stands in for an OpenBao server in plan's check: its health and its
// kubernetes auth roles by "mount/role".
type fakeSecretsServer struct {
	health error
	roles  map[string]*openbao.Role
	token  bool // false: KubernetesRole says there is no token
	// withheld: a token was given but not sent (a plain http:// address that is not loopback)
	withheld bool
	asked    []string
}

func (f *fakeSecretsServer) Health(context.Context) error { return f.health }

func (f *fakeSecretsServer) KubernetesRole(_ context.Context, mount, role string) (*openbao.Role, error) {
	f.asked = append(f.asked, mount+"/"+role)
	if f.withheld {
		return nil, openbao.ErrTokenWithheld
	}
	if !f.token {
		return nil, openbao.ErrNoToken
	}
	if r, ok := f.roles[mount+"/"+role]; ok {
		if r == nil {
			return nil, openbao.ErrForbidden
		}
		return r, nil
	}
	return nil, nil
}

const sidecarCheckGroup = `group: demo
defaults:
  secretsFrom:
    openbao: {address: "https://bao.test:8200"}
nodes:
  web:
    image: {rootfs: .}
    roles:
      sso:
        service: {image: {rootfs: ., user: "65532"}}
        sidecarSecrets:
          pw: {path: web/db, key: password}
  api:
    image: {rootfs: .}
    roles:
      sso:
        service: {image: {rootfs: ., user: "65532"}}
        sidecarSecrets:
          pw: {path: api/db, key: password}
  plain:
    image: {rootfs: .}
`

func goodRole(sa string) *openbao.Role {
	return &openbao.Role{ServiceAccounts: []string{sa}, Namespaces: []string{"demo"}, Audience: "openbao", Policies: []string{"default", sa}}
}

// TestCheckSecretsServers: plan's check of the secrets server (FR-004e) against a stand-in:
// what it cannot check is a note, a missing or misbound role an error with the `bao write` an
// operator needs, and only nodes with sidecar secrets are asked about.
func TestCheckSecretsServers(t *testing.T) {
	dir, _ := filepath.Abs("testdata/config")
	g, err := spec.Parse("slipway.yaml", []byte(sidecarCheckGroup), dir)
	if err != nil {
		t.Fatal(err)
	}
	const write = "bao write auth/kubernetes/role/slipway.demo.api bound_service_account_names=node-api bound_service_account_namespaces=demo audience=openbao token_policies=slipway.demo.api token_ttl=10m"
	for _, tc := range []struct {
		name      string
		srv       *fakeSecretsServer
		newErr    error
		wantNotes []string
		wantErr   string
		wantAsked []string
	}{
		{
			name:      "both roles bound",
			srv:       &fakeSecretsServer{token: true, roles: map[string]*openbao.Role{"kubernetes/slipway.demo.web": goodRole("node-web"), "kubernetes/slipway.demo.api": goodRole("node-api")}},
			wantAsked: []string{"kubernetes/slipway.demo.api", "kubernetes/slipway.demo.web"},
		},
		{
			name:      "wildcards bind too",
			srv:       &fakeSecretsServer{token: true, roles: map[string]*openbao.Role{"kubernetes/slipway.demo.web": goodRole("node-web"), "kubernetes/slipway.demo.api": {ServiceAccounts: []string{"*"}, Namespaces: []string{"*"}, Audience: "openbao", Policies: []string{"p"}}}},
			wantAsked: []string{"kubernetes/slipway.demo.api", "kubernetes/slipway.demo.web"},
		},
		{
			name:      "no token: one note for the server",
			srv:       &fakeSecretsServer{},
			wantNotes: []string{"secrets server https://bao.test:8200 (node api, web, slipway.yaml:4): answers; set SLIPWAY_OPENBAO_TOKEN or SLIPWAY_OPENBAO_TOKEN_FILE to a token that may read auth/<authMount>/role/<role> for plan to check its roles"},
			wantAsked: []string{"kubernetes/slipway.demo.api", "kubernetes/slipway.demo.web"},
		},
		{
			name:      "token withheld from plain http: one note for the server",
			srv:       &fakeSecretsServer{withheld: true},
			wantNotes: []string{"secrets server https://bao.test:8200 (node api, web, slipway.yaml:4): answers; plan does not send the token of SLIPWAY_OPENBAO_TOKEN_FILE over plain http:// except to a loopback address: its roles are not checked (give an https:// address)"},
			wantAsked: []string{"kubernetes/slipway.demo.api", "kubernetes/slipway.demo.web"},
		},
		{
			name:    "CA not the pinned one",
			newErr:  &openbao.CAPinError{URL: "http://pki.test/ca", Got: strings.Repeat("1", 64), Want: strings.Repeat("2", 64)},
			wantErr: "secrets server https://bao.test:8200 (node api, web, slipway.yaml:4): CA http://pki.test/ca: its SHA-256 is " + strings.Repeat("1", 64) + ", not the pinned caSha256 " + strings.Repeat("2", 64) + ": refused (a new CA needs a new pin; else someone on the path replaced it)",
		},
		{
			name:      "server does not answer",
			srv:       &fakeSecretsServer{health: errors.New("server https://bao.test:8200: sealed")},
			wantNotes: []string{"secrets server https://bao.test:8200 (node api, web, slipway.yaml:4): does not answer from here (server https://bao.test:8200: sealed): plan cannot check its roles; the sidecars reach it from their pods"},
		},
		{
			name:      "no client",
			newErr:    errors.New("CA http://pki.test/ca: 404 Not Found"),
			wantNotes: []string{"secrets server https://bao.test:8200 (node api, web, slipway.yaml:4): plan cannot check it: CA http://pki.test/ca: 404 Not Found"},
		},
		{
			name:      "missing role",
			srv:       &fakeSecretsServer{token: true, roles: map[string]*openbao.Role{"kubernetes/slipway.demo.web": goodRole("node-web")}},
			wantErr:   "node api: secretsFrom.openbao (slipway.yaml:4): server https://bao.test:8200 has no role slipway.demo.api at auth/kubernetes: an operator must write it (and its policy):\n    " + write,
			wantAsked: []string{"kubernetes/slipway.demo.api", "kubernetes/slipway.demo.web"},
		},
		{
			name: "misbound role",
			srv: &fakeSecretsServer{token: true, roles: map[string]*openbao.Role{"kubernetes/slipway.demo.web": goodRole("node-web"),
				"kubernetes/slipway.demo.api": {ServiceAccounts: []string{"node-web"}, Namespaces: []string{"other"}, Audience: "vault", Policies: []string{"p"}}}},
			wantErr:   `node api: secretsFrom.openbao (slipway.yaml:4): role slipway.demo.api of server https://bao.test:8200 binds service accounts node-web, not node-api, binds namespaces other, not demo, has audience "vault", not "openbao": an operator must write it:` + "\n    " + write,
			wantAsked: []string{"kubernetes/slipway.demo.api", "kubernetes/slipway.demo.web"},
		},
		{
			name: "refused token, role without policy",
			srv: &fakeSecretsServer{token: true, roles: map[string]*openbao.Role{"kubernetes/slipway.demo.web": nil,
				"kubernetes/slipway.demo.api": {ServiceAccounts: []string{"node-api"}, Namespaces: []string{"demo"}, Audience: "openbao", Policies: []string{"default"}}}},
			wantNotes: []string{
				"node api: secretsFrom.openbao (slipway.yaml:4): role slipway.demo.api of server https://bao.test:8200 has no policy but default: its sidecars will be refused their secrets (bao policy write, then token_policies=…)",
				"node web: secretsFrom.openbao (slipway.yaml:4): the token of SLIPWAY_OPENBAO_TOKEN_FILE may not read auth/kubernetes/role/slipway.demo.web (permission denied): plan cannot check the role",
			},
			wantAsked: []string{"kubernetes/slipway.demo.api", "kubernetes/slipway.demo.web"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(openbao.EnvToken, "")
			e := New(Options{Parallelism: 1, Connect: func(_ context.Context, s *spec.SecretsServer) (Server, error) {
				if s.Address != "https://bao.test:8200" {
					t.Errorf("client made for %s", s.Address)
				}
				if tc.newErr != nil {
					return nil, tc.newErr
				}
				return tc.srv, nil
			}})
			notes, err := e.checkSecretsServers(context.Background(), g, "demo")
			if diff := cmp.Diff(tc.wantNotes, notes); diff != "" {
				t.Errorf("notes (-want +got):\n%s", diff)
			}
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if gotErr != tc.wantErr {
				t.Errorf("error:\n got %s\nwant %s", gotErr, tc.wantErr)
			}
			if tc.srv != nil {
				asked := append([]string(nil), tc.srv.asked...)
				slices.Sort(asked)
				if strings.Join(asked, ",") != strings.Join(tc.wantAsked, ",") {
					t.Errorf("roles asked %v, want %v", asked, tc.wantAsked)
				}
			}
		})
	}
}

// TestUnpinnedCANote: a CA fetched over plain http:// without caSha256 is a note with the digest
// of what plan fetched; with the pin there is none.
func TestUnpinnedCANote(t *testing.T) {
	ca := []byte("-----BEGIN CERTIFICATE-----\nstand-in\n-----END CERTIFICATE-----\n")
	pki := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(ca) }))
	t.Cleanup(pki.Close)
	dir, _ := filepath.Abs("testdata/config")
	for _, tc := range []struct{ name, pin, want string }{
		{"no pin", "", "secrets server https://bao.test:8200 (node web, slipway.yaml:4): its CA comes over plain http:// from " + pki.URL +
			" with no caSha256 pin: anyone on the path can give plan and the sidecars another CA (the CA fetched now has caSha256 " + openbao.CADigest(ca) + ": check it, then pin it)"},
		{"pinned", ", caSha256: " + openbao.CADigest(ca), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := strings.Replace(sidecarCheckGroup, `openbao: {address: "https://bao.test:8200"}`,
				`openbao: {address: "https://bao.test:8200", caFetchUrl: "`+pki.URL+`"`+tc.pin+`}`, 1)
			file = file[:strings.Index(file, "  api:")]
			g, err := spec.Parse("slipway.yaml", []byte(file), dir)
			if err != nil {
				t.Fatal(err)
			}
			srv := &fakeSecretsServer{token: true, roles: map[string]*openbao.Role{"kubernetes/slipway.demo.web": goodRole("node-web")}}
			e := New(Options{Parallelism: 1, Connect: func(context.Context, *spec.SecretsServer) (Server, error) { return srv, nil }})
			notes, err := e.checkSecretsServers(context.Background(), g, "demo")
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(notes, "\n"); got != tc.want {
				t.Errorf("notes:\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}
