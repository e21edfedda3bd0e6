package devtest

import (
	"encoding/binary"
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

	"github.com/miekg/dns"

	"slipway.dev/slipway/internal/devcluster"
	"slipway.dev/slipway/internal/kube"
)

// Proxy is a plain-HTTP reverse proxy on loopback that records every request passing through
// it: e2e tests and the bench prove a run wrote nothing with it, image tests and the image
// bench count what reaches the registry. DNSProxy makes one in front of a DNS server over TCP,
// which counts the UPDATEs a run sends.
type Proxy struct {
	// URL is where clients reach the proxy: http://127.0.0.1:PORT (dns://… for DNSProxy).
	URL string
	srv *http.Server
	ln  net.Listener // DNSProxy's

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
	case http.MethodGet, http.MethodHead, http.MethodOptions, "QUERY":
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

// Host is the proxy's host:port, for clients that take a registry host or a DNS server.
func (p *Proxy) Host() string { _, h, _ := strings.Cut(p.URL, "://"); return h }

// Close stops the proxy.
func (p *Proxy) Close() {
	if p.ln != nil {
		_ = p.ln.Close()
		return
	}
	_ = p.srv.Close()
}

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

// DNSProxy is a Proxy in front of the DNS server at server (host:port) for DNS over TCP: it
// forwards every message both ways and records each one a client sends, Method its opcode
// (QUERY, UPDATE), Verb the same but AXFR (IXFR) for a zone transfer, and Path its question's
// name (an UPDATE's zone).
func DNSProxy(server string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("counting dns proxy: %w", err)
	}
	p := &Proxy{URL: "dns://" + ln.Addr().String(), ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serveDNS(c, server)
		}
	}()
	return p, nil
}

// serveDNS copies one client connection to the server and back, recording the client's
// messages (each is a two-byte length, then the message: RFC 1035 4.2.2).
func (p *Proxy) serveDNS(c net.Conn, server string) {
	defer c.Close()
	s, err := net.Dial("tcp", server)
	if err != nil {
		return
	}
	defer s.Close()
	go func() { _, _ = io.Copy(c, s) }()
	for {
		var n [2]byte
		if _, err := io.ReadFull(c, n[:]); err != nil {
			return
		}
		msg := make([]byte, binary.BigEndian.Uint16(n[:]))
		if _, err := io.ReadFull(c, msg); err != nil {
			return
		}
		p.recordDNS(msg)
		if _, err := s.Write(append(n[:], msg...)); err != nil {
			return
		}
	}
}

func (p *Proxy) recordDNS(msg []byte) {
	req := Request{Method: "?"}
	var m dns.Msg
	if m.Unpack(msg) == nil {
		req.Method = dns.OpcodeToString[m.Opcode]
	}
	req.Verb = req.Method
	if req.Method != "?" && len(m.Question) > 0 {
		req.Path = m.Question[0].Name
		if t := m.Question[0].Qtype; t == dns.TypeAXFR || t == dns.TypeIXFR {
			req.Verb = dns.TypeToString[t]
		}
	}
	p.mu.Lock()
	p.requests = append(p.requests, req)
	p.mu.Unlock()
}
