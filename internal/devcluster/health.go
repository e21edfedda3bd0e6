package devcluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// httpClient trusts the dev CA and presents the admin certificate.
func (e *Env) httpClient() (*http.Client, error) {
	tr := &http.Transport{}
	if b, err := os.ReadFile(filepath.Join(e.Dir, "pki", "ca.crt")); err == nil {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(b)
		cert, err := tls.LoadX509KeyPair(filepath.Join(e.Dir, "pki", "admin.crt"), filepath.Join(e.Dir, "pki", "admin.key"))
		if err != nil {
			return nil, err
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}
	}
	return &http.Client{Transport: tr, Timeout: 5 * time.Second}, nil
}

// Get fetches path from the API server with the admin credential (e.g. /metrics).
func (e *Env) Get(ctx context.Context, path string) ([]byte, error) {
	c, err := e.httpClient()
	if err != nil {
		return nil, err
	}
	c.Timeout = 30 * time.Second
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.Server+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return b, err
}

func (e *Env) waitHTTP(ctx context.Context, name, url string, limit time.Duration) error {
	c, err := e.httpClient()
	if err != nil {
		return err
	}
	deadline := time.Now().Add(limit)
	var last error
	for time.Now().Before(deadline) {
		pid, _ := readPID(filepath.Join(e.Dir, "pids", name))
		if pid > 0 && !alive(pid) {
			return fmt.Errorf("dev cluster: %s exited; last log lines:\n%s", name, logTail(filepath.Join(e.Dir, "logs", name+".log"), 20))
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Errorf("%s", resp.Status)
		} else {
			last = err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("dev cluster: %s not ready after %s: %v; last log lines:\n%s", name, limit, last,
		logTail(filepath.Join(e.Dir, "logs", name+".log"), 20))
}

// healthy checks the API server and the registry.
func (e *Env) healthy(ctx context.Context) error {
	c, err := e.httpClient()
	if err != nil {
		return err
	}
	for _, u := range []string{e.Server + "/readyz", "http://" + e.Registry + "/v2/"} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		resp, err := c.Do(req)
		if err != nil {
			return fmt.Errorf("%s: %w", u, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s", u, resp.Status)
		}
	}
	return nil
}

func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log)"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
