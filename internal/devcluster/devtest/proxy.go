package devtest

import (
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"

	"slipway.dev/slipway/internal/devcluster"
	"slipway.dev/slipway/internal/kube"
)

// Proxy is a plain-HTTP reverse proxy on loopback that records every request passing through
// it: e2e tests and the bench prove a run wrote nothing with it, image tests and the image
// bench count what reaches the registry.
type Proxy struct {
	// URL is where clients reach the proxy: http://127.0.0.1:PORT.
	URL string
	srv *http.Server

	mu       sync.Mutex
	requests []Request
}

// Request is one request seen by a Proxy.
type Request struct {
	Method string
	Path   string
	// Verb names the request as the API server's metrics do (GET, LIST, WATCH, POST, PUT,
	// PATCH, DELETE, DELETECOLLECTION); outside the Kubernetes API it is the method.
	Verb   string
	DryRun bool
}

func (r Request) String() string { return r.Method + " " + r.Path }

// Write reports whether the request may change something: anything but GET, HEAD and OPTIONS,
// dry runs included.
func (r Request) Write() bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// NewProxy forwards to target through rt (nil: http.DefaultTransport). Close stops it.
func NewProxy(target *url.URL, rt http.RoundTripper) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("counting proxy: %w", err)
	}
	p := &Proxy{URL: "http://" + ln.Addr().String()}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			// The registry builds its upload locations from Host: keeping the proxy's makes
			// the client send the blob through the proxy too, where it is counted.
			r.Out.Host = r.In.Host
		},
		Transport:     rt,
		FlushInterval: -1, // watches stream
		// A client that stops mid-watch (killed, or done) is routine, not news.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	p.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.record(r)
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// APIProxy is a Proxy in front of the dev cluster's API server that authenticates as its
// admin, so a client pointed at Kubeconfig needs no credential of its own.
func APIProxy(env *devcluster.Env) (*Proxy, error) {
	kc, err := kube.New(env.Kubeconfig, "")
	if err != nil {
		return nil, err
	}
	rt, err := kube.Transport(kc.Config)
	if err != nil {
		return nil, fmt.Errorf("counting proxy: transport of %s: %w", env.Kubeconfig, err)
	}
	target, err := url.Parse(kc.Config.Host)
	if err != nil {
		return nil, fmt.Errorf("counting proxy: server of %s: %w", env.Kubeconfig, err)
	}
	return NewProxy(target, rt)
}

// RegistryProxy is a Proxy in front of the plain-HTTP registry at host (host:port).
func RegistryProxy(host string) (*Proxy, error) {
	return NewProxy(&url.URL{Scheme: "http", Host: host}, nil)
}

// Host is the proxy's host:port, for clients that take a registry host.
func (p *Proxy) Host() string { return strings.TrimPrefix(p.URL, "http://") }

// Close stops the proxy.
func (p *Proxy) Close() { _ = p.srv.Close() }

func (p *Proxy) record(r *http.Request) {
	req := Request{Method: r.Method, Path: r.URL.Path, Verb: requestVerb(r), DryRun: r.URL.Query().Get("dryRun") != ""}
	p.mu.Lock()
	p.requests = append(p.requests, req)
	p.mu.Unlock()
}

// Requests returns the requests seen since the start or the last Take or Reset.
func (p *Proxy) Requests() []Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.requests)
}

// Take returns the requests seen since the start or the last Take or Reset, and forgets them.
func (p *Proxy) Take() []Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.requests
	p.requests = nil
	return r
}

// Reset forgets the requests seen.
func (p *Proxy) Reset() { p.Take() }

// Writes returns the requests seen that may have changed something (see Request.Write).
func (p *Proxy) Writes() []Request {
	return slices.DeleteFunc(p.Requests(), func(r Request) bool { return !r.Write() })
}

// ByVerb counts requests by Verb, dry runs apart as "<VERB> dry-run".
func ByVerb(reqs []Request) map[string]int {
	out := map[string]int{}
	for _, r := range reqs {
		if r.DryRun {
			out[r.Verb+" dry-run"]++
			continue
		}
		out[r.Verb]++
	}
	return out
}

// Kubeconfig is a kubeconfig that points at the proxy with no credential.
func (p *Proxy) Kubeconfig() string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: proxy
  cluster: {server: %q}
users:
- name: proxy
  user: {}
contexts:
- name: proxy
  context: {cluster: proxy, user: proxy}
current-context: proxy
`, p.URL)
}

// WriteKubeconfig writes Kubeconfig to path, readable by its owner only.
func (p *Proxy) WriteKubeconfig(path string) error {
	if err := os.WriteFile(path, []byte(p.Kubeconfig()), 0o600); err != nil {
		return fmt.Errorf("counting proxy: %w", err)
	}
	return nil
}

// requestVerb names a request as the API server's metrics do: GET, LIST, WATCH, POST, PUT,
// PATCH, DELETE, DELETECOLLECTION.
func requestVerb(r *http.Request) string {
	segs := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	var rest []string
	switch {
	case len(segs) >= 2 && segs[0] == "api":
		rest = segs[2:]
	case len(segs) >= 3 && segs[0] == "apis":
		rest = segs[3:]
	default:
		return r.Method // discovery, /version, /openapi, a registry
	}
	if len(rest) > 2 && rest[0] == "namespaces" {
		rest = rest[2:]
	}
	collection := len(rest) <= 1
	switch r.Method {
	case http.MethodGet:
		if v := r.URL.Query().Get("watch"); v == "true" || v == "1" {
			return "WATCH"
		}
		if collection {
			return "LIST"
		}
		return "GET"
	case http.MethodDelete:
		if collection {
			return "DELETECOLLECTION"
		}
	}
	return r.Method
}
