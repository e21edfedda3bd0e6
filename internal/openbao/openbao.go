// Package openbao is what slipway itself asks an OpenBao (or Vault) server, through OpenBao's
// client library: whether it answers, and how a kubernetes auth role is bound, for plan's
// check of a node's secrets server (FR-004e). It never reads a secret: only the pod's sidecar
// (internal/sidecar) does. The token it is given may read roles; it is never printed.
package openbao

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	bao "github.com/openbao/openbao/api/v2"
)

// The environment variables of the token plan checks roles with: one that may read
// auth/<mount>/role/<role> (a policy with `read` on that path), never one that reads secrets.
const (
	EnvToken     = "SLIPWAY_OPENBAO_TOKEN"
	EnvTokenFile = "SLIPWAY_OPENBAO_TOKEN_FILE"
)

// ErrNoToken says that plan was given no token to read roles with.
var ErrNoToken = errors.New("no token: neither " + EnvToken + " nor " + EnvTokenFile + " is set")

// ErrForbidden says that the token may not read the role (or that there is none).
var ErrForbidden = errors.New("permission denied")

// ErrTokenWithheld says that plan was given a token but did not send it: the server's address
// is plain http:// and not a loopback one, where anyone on the path would read it.
var ErrTokenWithheld = errors.New("the token is not sent over plain http:// except to a loopback address (127.0.0.0/8, ::1, localhost)")

// Client talks to one server.
type Client struct {
	c       *bao.Client
	address string
	// withheld: a token was given and not set (ErrTokenWithheld).
	withheld bool
}

// Role is what plan checks of a kubernetes auth role: whom it binds and for which audience.
type Role struct {
	ServiceAccounts []string // bound_service_account_names ("*": any)
	Namespaces      []string // bound_service_account_namespaces ("*": any)
	// NamespaceSelector is bound_service_account_namespace_selector: namespaces picked by
	// label, which plan cannot judge from the role alone.
	NamespaceSelector string
	Audience          string
	Policies          []string
}

// New is a client of the server at address, trusting caPEM ("" for the system's roots),
// sending token ("" for none: Health works without one) over https:// or to a loopback
// http:// address only (else KubernetesRole says ErrTokenWithheld). Each request gives up
// after timeout and is not retried: plan asks, it does not wait.
func New(address, caPEM, token string, timeout time.Duration) (*Client, error) {
	cfg := bao.DefaultConfig()
	cfg.Address = address
	cfg.Timeout = timeout
	cfg.MaxRetries = 0
	plain := PlainHTTP(address)
	// The library follows one redirect with the token, and refuses only https → http: from a
	// loopback http:// address a redirect could lead anywhere in clear.
	cfg.DisableRedirects = plain
	// ConfigureTLS sets verification back on, whatever BAO_SKIP_VERIFY said.
	if err := cfg.ConfigureTLS(&bao.TLSConfig{CACertBytes: []byte(caPEM)}); err != nil {
		return nil, fmt.Errorf("server %s: CA: %w", address, err)
	}
	c, err := bao.NewClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("server %s: %w", address, err)
	}
	// The library takes BAO_TOKEN/VAULT_TOKEN from the environment; slipway sends only the
	// token it was given.
	c.ClearToken()
	withheld := token != "" && plain && !Loopback(address)
	if token != "" && !withheld {
		c.SetToken(token)
	}
	return &Client{c: c, address: address, withheld: withheld}, nil
}

// PlainHTTP reports whether address is an http:// URL (no TLS).
func PlainHTTP(address string) bool {
	u, err := url.Parse(address)
	return err == nil && u.Scheme == "http"
}

// Loopback reports whether address's host is a loopback one: an IP of 127.0.0.0/8 or ::1, or
// localhost (which RFC 6761 keeps on the machine).
func Loopback(address string) bool {
	u, err := url.Parse(address)
	if err != nil {
		return false
	}
	h := u.Hostname()
	if strings.EqualFold(h, "localhost") || strings.HasSuffix(strings.ToLower(h), ".localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// Health is nil when the server answers, is initialized and unsealed.
func (c *Client) Health(ctx context.Context) error {
	h, err := c.c.Sys().HealthWithContext(ctx)
	switch {
	case err != nil:
		return fmt.Errorf("server %s: %w", c.address, Reason(err))
	case !h.Initialized:
		return fmt.Errorf("server %s: not initialized", c.address)
	case h.Sealed:
		return fmt.Errorf("server %s: sealed", c.address)
	}
	return nil
}

// KubernetesRole reads role of the kubernetes auth method mounted at mount; nil (no error)
// when the server has no such role. ErrNoToken without a token, ErrForbidden when the token
// may not read it.
func (c *Client) KubernetesRole(ctx context.Context, mount, role string) (*Role, error) {
	if c.withheld {
		return nil, ErrTokenWithheld
	}
	if c.c.Token() == "" {
		return nil, ErrNoToken
	}
	s, err := c.c.Logical().ReadWithContext(ctx, "auth/"+mount+"/role/"+role)
	if err != nil {
		var re *bao.ResponseError
		if errors.As(err, &re) && re.StatusCode == http.StatusForbidden {
			return nil, fmt.Errorf("server %s: auth/%s/role/%s: %w", c.address, mount, role, ErrForbidden)
		}
		return nil, fmt.Errorf("server %s: auth/%s/role/%s: %w", c.address, mount, role, Reason(err))
	}
	if s == nil || s.Data == nil {
		return nil, nil
	}
	r := &Role{
		ServiceAccounts:   strings_(s.Data["bound_service_account_names"]),
		Namespaces:        strings_(s.Data["bound_service_account_namespaces"]),
		NamespaceSelector: str(s.Data["bound_service_account_namespace_selector"]),
		Audience:          str(s.Data["audience"]),
		Policies:          strings_(s.Data["token_policies"]),
	}
	if len(r.Policies) == 0 {
		r.Policies = strings_(s.Data["policies"]) // servers before token_policies
	}
	return r, nil
}

// strings_ reads a list of strings from JSON ([]any), or a comma-separated string.
func strings_(v any) []string {
	switch x := v.(type) {
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	case string:
		if x == "" {
			return nil
		}
		return strings.Split(x, ",")
	}
	return nil
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// Reason is the server's own words for a refused request (its errors list), without the
// request's URL and headers the library's message repeats.
func Reason(err error) error {
	var re *bao.ResponseError
	if errors.As(err, &re) {
		if len(re.Errors) > 0 {
			return fmt.Errorf("%d %s", re.StatusCode, strings.Join(re.Errors, "; "))
		}
		return fmt.Errorf("%d %s", re.StatusCode, http.StatusText(re.StatusCode))
	}
	return err
}

// TokenFromEnv reads the token of EnvToken, or else of the file EnvTokenFile names; "" when
// neither is set. An error names the variable or the file, never the value.
func TokenFromEnv() (string, error) {
	if v := strings.TrimSpace(os.Getenv(EnvToken)); v != "" {
		return v, nil
	}
	f := os.Getenv(EnvTokenFile)
	if f == "" {
		return "", nil
	}
	b, err := os.ReadFile(f)
	if err != nil {
		return "", fmt.Errorf("%s: %w", EnvTokenFile, err)
	}
	v := strings.TrimSpace(string(b))
	if v == "" {
		return "", fmt.Errorf("%s: file %s is empty", EnvTokenFile, f)
	}
	return v, nil
}

// CAPinError says that the CA fetched from a caFetchUrl is not the one its caSha256 pins.
type CAPinError struct {
	URL, Got, Want string
}

func (e *CAPinError) Error() string {
	return fmt.Sprintf("CA %s: its SHA-256 is %s, not the pinned caSha256 %s: refused (a new CA needs a new pin; else someone on the path replaced it)", e.URL, e.Got, e.Want)
}

// CADigest is the lowercase hex SHA-256 of a CA's bytes, as caSha256 pins it.
func CADigest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// FetchCA gets a server's CA (PEM) from url with the system's roots: a caFetchUrl. With pin
// (caSha256, lowercase hex) a CA of another digest is a *CAPinError.
func FetchCA(ctx context.Context, url, pin string) ([]byte, error) {
	b, err := fetchCA(ctx, url)
	if err != nil || pin == "" {
		return b, err
	}
	if got := CADigest(b); got != pin {
		return nil, &CAPinError{URL: url, Got: got, Want: pin}
	}
	return b, nil
}

func fetchCA(ctx context.Context, url string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("CA %s: %w", url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("CA %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("CA %s: %s", url, resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, 1<<20))
}
