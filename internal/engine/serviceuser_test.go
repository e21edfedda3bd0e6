package engine

import (
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"slipway.dev/slipway/internal/spec"
)

// TestServiceUser (issue 43 item 5): plan refuses a service image whose config, known once a
// base image is pulled, would run the service as root; a node's own image may run as root.
func TestServiceUser(t *testing.T) {
	g := &spec.Group{Name: "demo", Nodes: []*spec.Node{{Name: "web", Roles: []*spec.Role{
		{Name: "sso", Service: &spec.Service{}}, {Name: "worker"},
	}}}}
	for _, tc := range []struct {
		name, job, user, wantErr string
	}{
		{"service without a user", "web-sso", "", "role sso: service image web-sso: the service would run as root, which its locked-down container refuses (runAsNonRoot): it has no user, so it runs as root; set nodes.web.roles.sso.service.image.user to a number other than 0"},
		{"service as root", "web-sso", "0:0", `its user "0:0" is root`},
		{"service by name", "web-sso", "nginx", `its user "nginx" is a name`},
		{"service as a user", "web-sso", "101:101", ""},
		{"node image as root", "web", "", ""},
		{"role on the node's image", "web-worker", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img, err := mutate.Config(empty.Image, v1.Config{User: tc.user})
			if err != nil {
				t.Fatal(err)
			}
			err = serviceUser(g, tc.job, img)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("error %v, want %q", err, tc.wantErr)
			}
		})
	}
}
