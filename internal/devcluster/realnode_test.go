package devcluster

import (
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// The kubelet lets no anonymous caller in, authenticates the API server by the node CA's
// client certificate, asks the API server to authorize, and registers tainted and labelled.
func TestKubeletConfig(t *testing.T) {
	p := nodePaths{dir: "/run/slipway-dev/x"}
	pki := func(f string) string { return "/data/pki/" + f }
	var cfg map[string]any
	if err := yaml.Unmarshal([]byte(kubeletConfig(p, pki, "127.0.0.1", slotShare(0), []string{"ContainerStopSignals=true"})), &cfg); err != nil {
		t.Fatal(err)
	}
	get := func(path string) any {
		var v any = cfg
		for _, k := range strings.Split(path, ".") {
			m, _ := v.(map[string]any)
			v = m[k]
		}
		return v
	}
	for path, want := range map[string]any{
		"kind":                              "KubeletConfiguration",
		"address":                           "127.0.0.1",
		"readOnlyPort":                      float64(0),
		"authentication.anonymous.enabled":  false,
		"authentication.webhook.enabled":    true,
		"authentication.x509.clientCAFile":  "/data/pki/node-ca.crt",
		"authorization.mode":                "Webhook",
		"failCgroupV1":                      false,
		"tlsCertFile":                       "/data/pki/kubelet-serving.crt",
		"containerRuntimeEndpoint":          "unix:///run/slipway-dev/x/containerd.sock",
		"featureGates.ContainerStopSignals": true,
		"registerWithTaints":                []any{map[string]any{"key": RealNodeLabel, "value": "true", "effect": "NoSchedule"}},
	} {
		if got := get(path); !equalJSON(got, want) {
			t.Errorf("%s = %#v, want %#v", path, got, want)
		}
	}
	if got := kubeletArgs(p, "vm"); !slices.Contains(got, "--node-labels="+RealNodeLabel+"=true") || !slices.Contains(got, "--hostname-override=vm") {
		t.Errorf("kubelet args %q lack the label or the node name", got)
	}
}

func equalJSON(a, b any) bool {
	x, _ := yaml.Marshal(a)
	y, _ := yaml.Marshal(b)
	return string(x) == string(y)
}

// containerd: the traps of the research note, each a line of its configuration.
func TestContainerdConfig(t *testing.T) {
	p := nodePaths{dir: "/run/slipway-dev/x"}
	cfg := containerdConfig(p, "127.0.0.1:5000/slipway-dev/pause:1")
	for _, want := range []string{
		"version = 3",
		`state = "/run/slipway-dev/x/containerd/state"`,
		"restrict_oom_score_adj = true",
		"netns_mounts_under_state_dir = true",
		`sandbox = "127.0.0.1:5000/slipway-dev/pause:1"`,
		`config_path = "/run/slipway-dev/x/certs.d"`,
		"containerd.runtimes.runc]", "containerd.runtimes.systemd]",
		`BinaryName = "/run/slipway-dev/x/bin/runc"`, `BinaryName = "/run/slipway-dev/x/bin/runc-systemd"`,
		`bin_dirs = ["/usr/lib/cni", "/opt/cni/bin"]`,
	} {
		if !strings.Contains(cfg, want) {
			t.Errorf("containerd config lacks %q:\n%s", want, cfg)
		}
	}
	if got := registryHosts("127.0.0.1:5000"); !strings.Contains(got, `server = "http://127.0.0.1:5000"`) || !strings.Contains(got, `[host."http://127.0.0.1:5000"]`) {
		t.Errorf("hosts.toml does not make the registry plain HTTP:\n%s", got)
	}
}

// The node's directory is under /run, one per data directory, whatever the data directory's
// parents' modes (a user-namespaced container must traverse the containers' state).
func TestNodeDirPerDataDir(t *testing.T) {
	a, b := nodeDirFor("/root/.local/state/slipway/dev"), nodeDirFor("/work/dev")
	if a == b || !strings.HasPrefix(a, "/run/slipway-dev/") || !strings.HasPrefix(b, "/run/slipway-dev/") {
		t.Errorf("node dirs %s and %s: want two distinct directories under /run/slipway-dev", a, b)
	}
}

// The certificates: the API server's client certificate and the kubelet's two, all from the
// node CA; the API server trusts the cluster's CA and the node CA for clients.
func TestNodeCertificates(t *testing.T) {
	dir := t.TempDir()
	if err := writePKI(dir); err != nil {
		t.Fatal(err)
	}
	if err := ensureNodeCA(dir); err != nil {
		t.Fatal(err)
	}
	pki := filepath.Join(dir, "pki")
	before, _ := os.ReadFile(filepath.Join(pki, "node-ca.crt"))
	if err := ensureNodeCA(dir); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(filepath.Join(pki, "node-ca.crt")); string(after) != string(before) {
		t.Error("ensureNodeCA replaced the node CA the API server holds")
	}
	if err := writeNodeCerts(dir, "vm", net.ParseIP("127.0.0.1")); err != nil {
		t.Fatal(err)
	}
	nodeCA := x509.NewCertPool()
	nodeCA.AppendCertsFromPEM(before)
	for _, c := range []struct {
		name  string
		usage x509.ExtKeyUsage
		cn    string
		org   []string
	}{
		{"kubelet-client", x509.ExtKeyUsageClientAuth, kubeletClientUser, nil},
		{"node", x509.ExtKeyUsageClientAuth, "system:node:vm", []string{"system:nodes"}},
		{"kubelet-serving", x509.ExtKeyUsageServerAuth, "vm", nil},
	} {
		cert := readCert(t, filepath.Join(pki, c.name+".crt"))
		opts := x509.VerifyOptions{Roots: nodeCA, KeyUsages: []x509.ExtKeyUsage{c.usage}}
		if c.name == "kubelet-serving" {
			opts.DNSName = "vm"
		}
		if _, err := cert.Verify(opts); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		if cert.Subject.CommonName != c.cn || !slices.Equal(cert.Subject.Organization, c.org) {
			t.Errorf("%s: subject %v, want CN=%s O=%v", c.name, cert.Subject, c.cn, c.org)
		}
		if info, err := os.Stat(filepath.Join(pki, c.name+".key")); err != nil || info.Mode().Perm() != 0o600 {
			t.Errorf("%s.key: %v, %v; want mode 0600", c.name, info.Mode(), err)
		}
	}
	serving := readCert(t, filepath.Join(pki, "kubelet-serving.crt"))
	if len(serving.IPAddresses) != 1 || !serving.IPAddresses[0].Equal(net.ParseIP("127.0.0.1")) {
		t.Errorf("serving certificate addresses %v, want 127.0.0.1", serving.IPAddresses)
	}
	bundle, _ := os.ReadFile(filepath.Join(pki, "client-ca.crt"))
	clusterCA, _ := os.ReadFile(filepath.Join(pki, "ca.crt"))
	if !strings.Contains(string(bundle), string(clusterCA)) || !strings.Contains(string(bundle), string(before)) {
		t.Error("client-ca.crt is not the bundle of the cluster's CA and the node CA")
	}
}

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatalf("%s: no PEM", path)
	}
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The API server reaches kubelets with its client certificate and trusts node certificates;
// kwok manages only its own nodes.
func TestFlagsForTheRealNode(t *testing.T) {
	e := &Env{Dir: "/data", Ports: map[string]int{"etcd": 1, "kube-apiserver": 2}, Kubeconfig: "/data/kubeconfig"}
	api := e.apiserverArgs()
	for _, want := range []string{"--client-ca-file=/data/pki/client-ca.crt",
		"--kubelet-client-certificate=/data/pki/kubelet-client.crt", "--kubelet-client-key=/data/pki/kubelet-client.key"} {
		if !slices.Contains(api, want) {
			t.Errorf("kube-apiserver args lack %s", want)
		}
	}
	kwok := e.kwokArgs()
	if !slices.Contains(kwok, "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake") || slices.Contains(kwok, "--manage-all-nodes=true") {
		t.Errorf("kwok args %q: want it to manage only the nodes annotated kwok.x-k8s.io/node=fake", kwok)
	}
	if !slices.Contains(kwok, "--config=/data/"+kwokConfigFile) {
		t.Errorf("kwok args %q: want its configuration from %s (kwok.yaml is for older slipways)", kwok, kwokConfigFile)
	}
	if !runsWith([]byte("kwok\x00"+strings.Join(kwok, "\x00")+"\x00"), e.kwokArgs()) {
		t.Error("a kwok running with these flags would be restarted")
	}
}

// A claim's volume is a directory under the data directory, reclaimed by Delete.
func TestVolumesUnderDataDir(t *testing.T) {
	e := &Env{Dir: "/data"}
	st := provisionStage(e.volumesDir())
	for _, want := range []string{"path: /data/volumes/pvc-{{ .metadata.uid }}", "type: DirectoryOrCreate",
		`persistentVolumeReclaimPolicy: {{ default "Delete" .spec.reclaimPolicy | Quote }}`} {
		if !strings.Contains(st, want) {
			t.Errorf("provision stage lacks %q", want)
		}
	}
	if strings.Contains(st, "/tmp/") {
		t.Error("provision stage still puts volumes under /tmp")
	}
	// kwok.yaml, for slipways older than the real node, holds their stage byte for byte.
	if legacy := provisionStage(legacyVolumesDir); !strings.Contains(legacy, "            path: /tmp/kwok-local-path-provisioner/pvc-{{ .metadata.uid }}\n") {
		t.Errorf("the legacy provision stage is not the older slipways' one:\n%s", legacy)
	}
}

func TestUnescapeMount(t *testing.T) {
	for in, want := range map[string]string{`/a/b`: "/a/b", `/a\040b`: "/a b", `/x\134y`: `/x\y`} {
		if got := unescapeMount(in); got != want {
			t.Errorf("unescapeMount(%q) = %q, want %q", in, got, want)
		}
	}
}

// A second cluster is told that another program holds its slot's kubelet port.
func TestPortsTaken(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	if got := portsTaken(slotShare(3), port); !strings.Contains(got, "taken by another program") || !strings.Contains(got, "slot 3") {
		t.Errorf("taken: %q, want another program and the slot named", got)
	}
	l.Close()
	if got := portsTaken(slotShare(3), port); got != "" {
		t.Errorf("free port: %q, want none", got)
	}
}
