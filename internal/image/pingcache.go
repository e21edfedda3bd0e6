package image

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
)

// pingCache answers the registry library's ping (an anonymous GET /v2/) once per registry
// host and scheme. The library pings once per repository, and every node has a repository of
// its own, so a plan of N unchanged nodes cost N pings besides the N HEADs; against a
// plain-HTTP registry each ping also tried, and failed, a TLS handshake first (issue 17). The
// answer is the registry's authentication challenge, the same for every repository of a
// host during one run, and carries no credential: a request with an Authorization header
// is never answered from the cache.
type pingCache struct {
	next http.RoundTripper

	mu      sync.Mutex
	hosts   map[string]*sync.Mutex // one ping at a time per scheme://host
	answers map[string]*pingAnswer // by scheme://host
	plain   map[string]bool        // hosts whose /v2/ answered over plain HTTP
}

// errPlainHTTP and errNotTLS are how net/http and crypto/tls fail an https request that met a
// plain-HTTP server.
const (
	errPlainHTTP = "server gave HTTP response to HTTPS client"
	errNotTLS    = "first record does not look like a TLS handshake"
)

type pingAnswer struct {
	status int
	header http.Header
	body   []byte
}

func newPingCache(next http.RoundTripper) *pingCache {
	return &pingCache{next: next, hosts: map[string]*sync.Mutex{}, answers: map[string]*pingAnswer{}, plain: map[string]bool{}}
}

func isPing(req *http.Request) bool {
	return req.Method == http.MethodGet && req.URL.Path == "/v2/" && req.Header.Get("Authorization") == ""
}

func (c *pingCache) RoundTrip(req *http.Request) (*http.Response, error) {
	if !isPing(req) {
		return c.next.RoundTrip(req)
	}
	key := req.URL.Scheme + "://" + req.URL.Host
	c.mu.Lock()
	hm := c.hosts[key]
	if hm == nil {
		hm = &sync.Mutex{}
		c.hosts[key] = hm
	}
	c.mu.Unlock()
	hm.Lock()
	defer hm.Unlock()

	c.mu.Lock()
	a, plain := c.answers[key], c.plain[req.URL.Host]
	c.mu.Unlock()
	if a != nil {
		return a.response(req), nil
	}
	if req.URL.Scheme == "https" && plain {
		// The library races https against http for a loopback or insecure registry; once
		// http has answered, the https attempt would only fail again, after a handshake.
		return nil, fmt.Errorf("registry %s answered on plain HTTP", req.URL.Host)
	}
	resp, err := c.next.RoundTrip(req)
	if err != nil {
		if req.URL.Scheme == "https" && (strings.Contains(err.Error(), errPlainHTTP) || strings.Contains(err.Error(), errNotTLS)) {
			c.mu.Lock()
			c.plain[req.URL.Host] = true
			c.mu.Unlock()
		}
		return nil, err
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusUnauthorized {
		return resp, nil // an error is not cached: the next ping asks again
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	a = &pingAnswer{status: resp.StatusCode, header: resp.Header.Clone(), body: body}
	c.mu.Lock()
	c.answers[key] = a
	if req.URL.Scheme == "http" {
		c.plain[req.URL.Host] = true
	}
	c.mu.Unlock()
	return a.response(req), nil
}

func (a *pingAnswer) response(req *http.Request) *http.Response {
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", a.status, http.StatusText(a.status)),
		StatusCode:    a.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        a.header.Clone(),
		Body:          io.NopCloser(bytes.NewReader(a.body)),
		ContentLength: int64(len(a.body)),
		Request:       req,
	}
}
