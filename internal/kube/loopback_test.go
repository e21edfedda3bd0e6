package kube

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/client-go/rest"
)

// An API server on this machine is asked for uncompressed responses; any other keeps gzip.
func TestCompressionOffOnlyOnLoopback(t *testing.T) {
	for _, tc := range []struct {
		host string
		off  bool
	}{
		{"https://127.0.0.1:6443", true},
		{"https://[::1]:6443", true},
		{"https://localhost:6443", true},
		{"127.0.0.1:6443", true},
		{"https://10.0.0.1:6443", false},
		{"https://api.example.org", false},
		{"https://127.0.0.1.example.org:6443", false},
	} {
		t.Run(tc.host, func(t *testing.T) {
			c, err := NewForConfig(&rest.Config{Host: tc.host})
			if err != nil {
				t.Fatal(err)
			}
			if c.Config.DisableCompression != tc.off {
				t.Errorf("DisableCompression = %v, want %v", c.Config.DisableCompression, tc.off)
			}
			if wrapped := c.Config.WrapTransport != nil; wrapped != tc.off {
				t.Errorf("transport wrapped to ask for identity: %v, want %v", wrapped, tc.off)
			}
		})
	}
}

// A plain-HTTP API server on loopback (kubectl proxy, the counting proxy) gets Go's default
// transport from client-go, which ignores DisableCompression: the request must still ask for
// no gzip, and a request that names its own encoding keeps it.
func TestPlainHTTPLoopbackAsksForIdentity(t *testing.T) {
	got := make(chan string, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("Accept-Encoding")
		fmt.Fprint(w, `{"major":"1","minor":"37"}`)
	}))
	defer srv.Close()
	c, err := NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Clientset.Discovery().ServerVersion(); err != nil {
		t.Fatal(err)
	}
	if enc := <-got; enc != "identity" {
		t.Errorf("Accept-Encoding %q, want identity", enc)
	}
	rt, err := rest.TransportFor(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/version", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if enc := <-got; enc != "gzip" {
		t.Errorf("a request's own Accept-Encoding: %q reached the server, want gzip", enc)
	}
}
