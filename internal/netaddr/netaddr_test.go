package netaddr

import "testing"

// TestLoopback: plain HTTP to a registry and compression from an API server are allowed only
// for an address on this machine, so what is not one must answer false (a name that merely
// ends in "localhost", a private or unspecified address, a host with its port still on).
func TestLoopback(t *testing.T) {
	for _, tc := range []struct {
		host string
		want bool
	}{
		{"localhost", true},
		{"LocalHost", true},
		{"localhost.", true}, // fully qualified
		{"registry.localhost", true},
		{"registry.localhost.", true},
		{"127.0.0.1", true},
		{"127.1.2.3", true}, // all of 127.0.0.0/8
		{"127.0.0.1.", true},
		{"::1", true},
		{"[::1]", true},
		{"0:0:0:0:0:0:0:1", true},
		{"::ffff:127.0.0.1", true}, // IPv4-mapped
		{"", false},
		{"notlocalhost", false},
		{"localhost.example.org", false},
		{"localhost.localdomain", false},
		{"registry", false},
		{"0.0.0.0", false},
		{"::", false},
		{"10.0.0.1", false},
		{"128.0.0.1", false},
		{"::2", false},
		{"127.0.0.1:5000", false}, // a host and port is not a host
		{"[::1]:5000", false},
	} {
		t.Run(tc.host, func(t *testing.T) {
			if got := Loopback(tc.host); got != tc.want {
				t.Errorf("Loopback(%q) = %v, want %v", tc.host, got, tc.want)
			}
		})
	}
}
