package sidecar

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	bao "github.com/openbao/openbao/api/v2"

	"slipway.dev/slipway/internal/openbao"
	"slipway.dev/slipway/internal/secretsconf"
)

// caRefresh is how often a CA from caFetchURL is fetched again (FR-004e).
const caRefresh = 15 * time.Minute

// requestTimeout bounds one request, its retries included: a server that is slow (loaded,
// or waiting on its storage) is given that long before the round gives up and logs it.
const requestTimeout = 30 * time.Second

// silentAfter and pingTimeout find a connection that went silent: the client's requests to a
// server all share one HTTP/2 connection, and one whose peer went without a word (a server
// host lost, a NAT or conntrack entry dropped) would otherwise hold every request of every
// later round until requestTimeout, without end (the kernel gives up on it after minutes).
// After silentAfter without a frame the client sends a PING; with no answer within
// pingTimeout it closes the connection, the request in flight is tried again (MaxRetries) on
// a new one. A live server answers a PING at once, however slow its handlers are.
const (
	silentAfter = 5 * time.Second
	pingTimeout = 5 * time.Second
)

// server is the OpenBao (or Vault) server, through OpenBao's client library: the sidecar logs
// in with the pod's projected token and reads KV v2 secrets with the token it gets.
type server struct {
	cfg    *secretsconf.Config
	client *bao.Client
	// expires is when the login's token stops working; zero: not logged in.
	expires time.Time
	caAt    time.Time // when the CA was last fetched from cfg.CAFetchURL
}

func newServer(ctx context.Context, cfg *secretsconf.Config) (*server, error) {
	s := &server{cfg: cfg}
	return s, s.connect(ctx)
}

// connect makes the client, with the CA of the configuration or fetched from its URL.
func (s *server) connect(ctx context.Context) error {
	bc := bao.DefaultConfig()
	bc.Address = s.cfg.Address
	bc.Timeout = requestTimeout
	bc.MaxRetries = 2
	if t, ok := bc.HttpClient.Transport.(*http.Transport); ok {
		t.HTTP2 = &http.HTTP2Config{SendPingTimeout: silentAfter, PingTimeout: pingTimeout}
	}
	ca := s.cfg.CAPEM
	if s.cfg.CAFetchURL != "" {
		b, err := openbao.FetchCA(ctx, s.cfg.CAFetchURL, s.cfg.CASHA256)
		if err != nil {
			return err
		}
		ca, s.caAt = string(b), time.Now()
	}
	if ca != "" {
		if err := bc.ConfigureTLS(&bao.TLSConfig{CACertBytes: []byte(ca)}); err != nil {
			return fmt.Errorf("server %s: CA: %w", s.cfg.Address, err)
		}
	}
	c, err := bao.NewClient(bc)
	if err != nil {
		return fmt.Errorf("server %s: %w", s.cfg.Address, err)
	}
	// The library takes BAO_TOKEN from the environment; the sidecar uses only its login's.
	c.ClearToken()
	s.client, s.expires = c, time.Time{}
	return nil
}

// refresh fetches the CA again when it is due, and logs in again when the token has used two
// thirds of its life.
func (s *server) refresh(ctx context.Context) error {
	if s.cfg.CAFetchURL != "" && time.Since(s.caAt) > caRefresh {
		if err := s.connect(ctx); err != nil {
			return err
		}
	}
	if !s.expires.IsZero() && time.Now().Before(s.expires) {
		return nil
	}
	return s.login(ctx)
}

// login exchanges the projected token for a server token. The token file is read each time:
// the kubelet replaces it before it expires.
func (s *server) login(ctx context.Context) error {
	jwt, err := os.ReadFile(s.cfg.TokenFile)
	if err != nil {
		return fmt.Errorf("login: token: %w", err)
	}
	sec, err := s.client.Logical().WriteWithContext(ctx, "auth/"+s.cfg.AuthMount+"/login",
		map[string]any{"role": s.cfg.Role, "jwt": strings.TrimSpace(string(jwt))})
	if err != nil {
		return fmt.Errorf("login to %s as role %s: %w", s.cfg.Address, s.cfg.Role, openbao.Reason(err))
	}
	if sec == nil || sec.Auth == nil || sec.Auth.ClientToken == "" {
		return fmt.Errorf("login to %s as role %s: no token in the answer", s.cfg.Address, s.cfg.Role)
	}
	s.client.SetToken(sec.Auth.ClientToken)
	life := time.Duration(sec.Auth.LeaseDuration) * time.Second
	if life <= 0 {
		life = time.Hour
	}
	s.expires = time.Now().Add(life * 2 / 3)
	return nil
}

// read returns the data of the KV v2 secret at path of mount; a refused token logs in again
// once.
func (s *server) read(ctx context.Context, mount, path string) (map[string]any, error) {
	for try := 0; ; try++ {
		kv, err := s.client.KVv2(mount).Get(ctx, path)
		if err == nil {
			return kv.Data, nil
		}
		var re *bao.ResponseError
		if try == 0 && errors.As(err, &re) && re.StatusCode == http.StatusForbidden {
			if lerr := s.login(ctx); lerr != nil {
				return nil, lerr
			}
			continue
		}
		return nil, fmt.Errorf("read %s/%s: %w", mount, path, openbao.Reason(err))
	}
}

// source reads the data of f's secret: a KV v2 secret, or the database engine's static
// credentials of a role (username, password), which OpenBao rotates.
func (s *server) source(ctx context.Context, f secretsconf.File) (map[string]any, error) {
	if f.Engine != secretsconf.EngineDatabase {
		return s.read(ctx, f.Mount, f.Path)
	}
	path := f.Mount + "/static-creds/" + f.Path
	for try := 0; ; try++ {
		sec, err := s.client.Logical().ReadWithContext(ctx, path)
		if err == nil && sec != nil {
			return sec.Data, nil
		}
		var re *bao.ResponseError
		if try == 0 && errors.As(err, &re) && re.StatusCode == http.StatusForbidden {
			if lerr := s.login(ctx); lerr != nil {
				return nil, lerr
			}
			continue
		}
		if err == nil {
			return nil, fmt.Errorf("read %s: no such static role", path)
		}
		return nil, fmt.Errorf("read %s: %w", path, openbao.Reason(err))
	}
}
