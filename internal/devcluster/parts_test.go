package devcluster

import (
	"fmt"
	"net"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// dev env prints the parts' lines in the order of the parts list; a part that does not run
// prints none.
func TestExportsWalkParts(t *testing.T) {
	e := &Env{Dir: t.TempDir(), Kubeconfig: "/d/kubeconfig", Registry: "127.0.0.1:5000", BinDir: "/bin/dev",
		DNSServer: "127.0.0.1:53", TSIGSecretFile: "/d/dns/tsig.secret", Gateway: Gateway, RealNode: "vm",
		OpenBaoAddr: "https://10.244.0.1:8200", OpenBaoCAFile: "/d/openbao/ca.crt", OpenBaoTokenFile: "/d/openbao/root-token"}
	want := "export KUBE_CONFIG_PATH=/d/kubeconfig KUBECONFIG=/d/kubeconfig K8S_REGISTRY=127.0.0.1:5000 PATH=/bin/dev:$PATH\n" +
		"export SLIPWAY_DNS_SERVER=127.0.0.1:53 SLIPWAY_TSIG_SECRET_FILE=/d/dns/tsig.secret\n" +
		"export SLIPWAY_DEV_REAL_NODE=vm\n" +
		"export K8S_GATEWAY=" + Gateway + "\n" +
		"export SLIPWAY_DEV_OPENBAO_ADDR=https://10.244.0.1:8200 SLIPWAY_DEV_OPENBAO_CA_FILE=/d/openbao/ca.crt SLIPWAY_DEV_OPENBAO_TOKEN_FILE=/d/openbao/root-token\n"
	if diff := cmp.Diff(want, e.Exports()); diff != "" {
		t.Errorf("Exports (-want +got):\n%s", diff)
	}
}

// Each dev up option adds exactly its part; the cluster, DNS, the real node (or why there is
// none) and the base images are always there.
func TestPartsWanted(t *testing.T) {
	names := func(o Options) []string {
		var out []string
		for _, p := range parts {
			if p.wanted(o) {
				out = append(out, reflect.TypeOf(p).Name())
			}
		}
		return out
	}
	always := []string{"clusterPart", "dnsPart", "realNodePart", "baseImagesPart"}
	for _, tc := range []struct {
		name string
		opts Options
		want []string
	}{
		{"core", Options{Core: true}, always},
		{"publish", Options{}, append(append([]string{}, always...), "publishingPart")},
		{"all", Options{Core: true, Spire: true, Secrets: true, Central: true}, append(append([]string{}, always...), "spirePart", "secretsPart", "centralPart", "s3Part")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, names(tc.opts)); diff != "" {
				t.Errorf("wanted parts (-want +got):\n%s", diff)
			}
		})
	}
}

// dev down of a directory where nothing runs stops no part.
func TestStopPartsNothingRunning(t *testing.T) {
	testRunDir(t)
	if n := stopParts(t.TempDir(), t.TempDir()); n != 0 {
		t.Errorf("stopParts = %d, want 0", n)
	}
}

// A second environment asking for the publishing parts is told at once that Envoy Gateway's
// fixed ports are taken, instead of waiting minutes for a Gateway that is never Programmed.
func TestEnvoyPortsTaken(t *testing.T) {
	l, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	old := envoyFixedPorts
	envoyFixedPorts = []int{port}
	t.Cleanup(func() { envoyFixedPorts = old })
	if got := envoyPortsTaken(); !strings.Contains(got, fmt.Sprintf("port %d", port)) || !strings.Contains(got, "without --publish") {
		t.Errorf("taken: %q, want the port and the way out named", got)
	}
	l.Close()
	if got := envoyPortsTaken(); got != "" {
		t.Errorf("free: %q, want none", got)
	}
}
