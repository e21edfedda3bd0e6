package secretsconf

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRoundTrip: what render encodes the sidecar decodes as it was.
func TestRoundTrip(t *testing.T) {
	c := &Config{Address: "http://bao:8200", AuthMount: "kubernetes", Role: "node-web", TokenFile: TokenFile, Dir: "/run/secrets", PollSeconds: 5,
		ServiceContainer: "service",
		Files:            []File{{Name: "pw", Mount: "secret", Path: "web/db", Key: "password", Restart: true}}}
	got, err := Decode([]byte(c.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(c, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if !got.NeedsRestart() {
		t.Error("NeedsRestart false")
	}
}

func TestDecodeRefuses(t *testing.T) {
	for raw, want := range map[string]string{
		`{`:                                   "configuration: unexpected end of JSON input",
		`{"dir":"/d","files":[{"name":"a"}]}`: "configuration: no address",
		`{"address":"http://b","files":[{"name":"a"}]}`:                           "configuration: no dir",
		`{"address":"http://b","dir":"/d"}`:                                       "configuration: no files",
		`{"address":"http://b","dir":"/d","files":[{"name":"a","restart":true}]}`: "configuration: a restart file needs serviceContainer, the container it restarts",
	} {
		if _, err := Decode([]byte(raw)); err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", raw, err, want)
		}
	}
}
