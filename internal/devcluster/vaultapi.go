package devcluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// secretsAPI calls the secrets server's HTTP API (the part OpenBao and Vault share): the few
// calls dev up makes need no client library.
type secretsAPI struct {
	addr, caFile string
	token        string // the root token once known; never printed
}

func (e *Env) secretsClient() *secretsAPI {
	return &secretsAPI{addr: e.OpenBaoAddr, caFile: e.OpenBaoCAFile}
}

// call sends body (JSON, nil for none) to /v1/<path> and decodes the answer into out (when
// not nil). An answer other than 2xx is an error with the server's errors.
func (a *secretsAPI) call(ctx context.Context, method, path string, body, out any) error {
	c, err := a.httpClient()
	if err != nil {
		return err
	}
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.addr+"/v1/"+path, r)
	if err != nil {
		return err
	}
	if a.token != "" {
		req.Header.Set("X-Vault-Token", a.token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("secrets server: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("secrets server: %s %s: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		var e struct{ Errors []string }
		_ = json.Unmarshal(b, &e)
		return fmt.Errorf("secrets server: %s %s: %s: %s", method, path, resp.Status, strings.Join(e.Errors, "; "))
	}
	if out != nil && len(b) > 0 {
		return json.Unmarshal(b, out)
	}
	return nil
}

func (a *secretsAPI) httpClient() (*http.Client, error) {
	pem, err := os.ReadFile(a.caFile)
	if err != nil {
		return nil, fmt.Errorf("secrets server: CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("secrets server: CA %s holds no certificate", a.caFile)
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
	}}, nil
}

// health is nil when the server is initialised, unsealed and active (sys/health answers 200).
func (a *secretsAPI) health(ctx context.Context) error {
	var h struct{ Initialized, Sealed, Standby bool }
	if err := a.call(ctx, http.MethodGet, "sys/health", nil, &h); err != nil {
		return err
	}
	if !h.Initialized || h.Sealed || h.Standby {
		return errSecretsSealed
	}
	return nil
}

// configureSecrets initialises and unseals the server just started, writes its root token
// to OpenBaoTokenFile, mounts KV v2 and enables and configures kubernetes auth.
func (e *Env) configureSecrets(ctx context.Context) error {
	a := e.secretsClient()
	// sys/init answers once the listener is up: 200 with initialized false.
	var st struct{ Initialized bool }
	err := waitFor(ctx, 60*time.Second, "secrets server answers", func() (bool, string) {
		if _, ok := secretsPID(e.Dir); !ok {
			return true, "" // exited: the call below says so
		}
		err := a.call(ctx, http.MethodGet, "sys/init", nil, &st)
		return err == nil, fmt.Sprint(err)
	})
	if err != nil {
		return err
	}
	var init struct {
		Keys      []string `json:"keys_base64"`
		RootToken string   `json:"root_token"`
	}
	if err := a.call(ctx, http.MethodPut, "sys/init", map[string]int{"secret_shares": 1, "secret_threshold": 1}, &init); err != nil {
		return err
	}
	if len(init.Keys) != 1 || init.RootToken == "" {
		return fmt.Errorf("secrets server: sys/init gave %d keys and no root token", len(init.Keys))
	}
	if err := a.call(ctx, http.MethodPut, "sys/unseal", map[string]string{"key": init.Keys[0]}, nil); err != nil {
		return err
	}
	a.token = init.RootToken
	if err := writeSecretFile(e.OpenBaoTokenFile, init.RootToken); err != nil {
		return err
	}
	if err := waitFor(ctx, 30*time.Second, "secrets server active", func() (bool, string) {
		err := a.health(ctx)
		return err == nil, fmt.Sprint(err)
	}); err != nil {
		return err
	}
	if err := a.call(ctx, http.MethodPost, "sys/mounts/"+SecretsKVMount, map[string]any{
		"type": "kv", "options": map[string]string{"version": "2"}, "description": "slipway dev: KV v2",
	}, nil); err != nil {
		return err
	}
	// A new KV v2 mount refuses requests for a moment while it sets itself up.
	if err := waitFor(ctx, 30*time.Second, "KV v2 at "+SecretsKVMount+"/", func() (bool, string) {
		err := a.call(ctx, http.MethodGet, SecretsKVMount+"/config", nil, nil)
		return err == nil, fmt.Sprint(err)
	}); err != nil {
		return err
	}
	return e.configureKubernetesAuth(ctx, a)
}

// configureKubernetesAuth enables kubernetes auth and points it at the dev API server, with
// the reviewer ServiceAccount's token for its TokenReviews.
func (e *Env) configureKubernetesAuth(ctx context.Context, a *secretsAPI) error {
	if err := e.kubectlApply(ctx, reviewerObjects()); err != nil {
		return err
	}
	// A year: the server lives as long as the cluster, and the API server caps nothing here.
	jwt, err := e.kubectl(ctx, "-n", "kube-system", "create", "token", SecretsReviewer, "--duration=8760h")
	if err != nil {
		return fmt.Errorf("secrets server: reviewer token: %w", err)
	}
	ca, err := os.ReadFile(filepath.Join(e.Dir, "pki", "ca.crt"))
	if err != nil {
		return fmt.Errorf("secrets server: cluster CA: %w", err)
	}
	if err := a.call(ctx, http.MethodPost, "sys/auth/"+SecretsAuthMount, map[string]string{
		"type": "kubernetes", "description": "slipway dev: the dev API server's service accounts",
	}, nil); err != nil {
		return err
	}
	return a.call(ctx, http.MethodPost, "auth/"+SecretsAuthMount+"/config", map[string]any{
		"kubernetes_host":      e.Server,
		"kubernetes_ca_cert":   string(ca),
		"token_reviewer_jwt":   strings.TrimSpace(jwt),
		"disable_local_ca_jwt": true,
	}, nil)
}

// reviewerObjects are the reviewer ServiceAccount and its binding to system:auth-delegator
// (TokenReview and SubjectAccessReview).
func reviewerObjects() string {
	return `apiVersion: v1
kind: ServiceAccount
metadata: {name: ` + SecretsReviewer + `, namespace: kube-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: ` + SecretsReviewer + `}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: system:auth-delegator}
subjects:
- {kind: ServiceAccount, name: ` + SecretsReviewer + `, namespace: kube-system}
`
}

// writeSecretFile writes a credential to path, mode 0600 from its first byte (a new file
// renamed over the old).
func writeSecretFile(path, secret string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return fmt.Errorf("secrets server: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(secret); err != nil {
		tmp.Close()
		return fmt.Errorf("secrets server: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("secrets server: %w", err)
	}
	return os.Rename(tmp.Name(), path)
}
