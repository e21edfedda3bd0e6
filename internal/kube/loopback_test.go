package kube

import (
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
		})
	}
}
