package devcluster

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The Gateway of the dev cluster (SPEC §10): Envoy Gateway serves GatewayClass slipway-dev and
// the Gateway slipway-dev/public, whose envoy Service gets its address from MetalLB.
const (
	GatewayAPIVersion = "v1.6.3" // sigs.k8s.io/gateway-api, as in go.mod (a test checks it)
	GatewayClass      = "slipway-dev"
	GatewayNamespace  = "slipway-dev"
	GatewayName       = "public"
	EnvoyNamespace    = "envoy-gateway-system"
	EnvoyController   = "gateway.envoyproxy.io/gatewayclass-controller"
	envoyProc         = "envoy-gateway"
	// GatewayAddress is the Gateway's address, from MetalLB's reserved pool: the same on every
	// dev cluster, and never taken by another Service.
	GatewayAddress = "203.0.113.1"
	// certsPath is where Envoy Gateway reads its xDS certificate when its provider is
	// Kubernetes; the path is fixed in its code (internal/xds/runner).
	certsPath = "/certs"
)

// Gateway is the <namespace>/<name> of the dev cluster's Gateway, exported as K8S_GATEWAY.
const Gateway = GatewayNamespace + "/" + GatewayName

// gatewayExports is the line of `dev env` for the Gateway, once it is Programmed.
func (e *Env) gatewayExports() string {
	if e.Gateway == "" {
		return ""
	}
	return fmt.Sprintf("export K8S_GATEWAY=%s\n", e.Gateway)
}

// gatewayAPICRDs installs the standard channel of the pinned gateway-api module: every kind,
// TCPRoute, UDPRoute and ListenerSet among them, which Envoy Gateway watches too.
func (e *Env) gatewayAPICRDs(ctx context.Context, envoyCache string) error {
	dir, err := moduleDir(ctx, filepath.Join(envoyCache, "src", "envoy-gateway"), "sigs.k8s.io/gateway-api")
	if err != nil {
		return err
	}
	if !strings.HasSuffix(dir, "@"+GatewayAPIVersion) {
		return fmt.Errorf("dev cluster: the envoy-gateway tool module has gateway-api %s, want %s", filepath.Base(dir), GatewayAPIVersion)
	}
	files, err := yamlFiles(filepath.Join(dir, "config", "crd", "standard"))
	if err != nil {
		return fmt.Errorf("dev cluster: Gateway API CRDs: %w", err)
	}
	return e.applyFiles(ctx, "Gateway API CRDs "+GatewayAPIVersion, files)
}

// startEnvoyGateway installs Envoy Gateway's CRDs and namespace, has it make its certificates
// (certgen writes them as Secrets), and runs it out of cluster with its xDS certificate
// bind-mounted at /certs in a mount namespace of its own.
func (e *Env) startEnvoyGateway(ctx context.Context, bin, cache string, progress io.Writer) error {
	fmt.Fprintln(progress, "dev: starting Envoy Gateway")
	dir, err := moduleDir(ctx, filepath.Join(cache, "src", "envoy-gateway"), "github.com/envoyproxy/gateway")
	if err != nil {
		return err
	}
	crds, err := yamlFiles(filepath.Join(dir, "charts", "gateway-helm", "charts", "crds", "crds", "generated"))
	if err != nil {
		return fmt.Errorf("dev cluster: Envoy Gateway CRDs: %w", err)
	}
	if err := e.applyFiles(ctx, "Envoy Gateway CRDs", crds); err != nil {
		return err
	}
	if err := e.kubectlApply(ctx, "apiVersion: v1\nkind: Namespace\nmetadata: {name: "+EnvoyNamespace+"}\n"); err != nil {
		return err
	}
	env := []string{"KUBECONFIG=" + e.Kubeconfig, "ENVOY_GATEWAY_NAMESPACE=" + EnvoyNamespace}
	certgen := exec.CommandContext(ctx, bin, "certgen", "--disable-topology-injector")
	certgen.Env = append(os.Environ(), env...)
	if out, err := certgen.CombinedOutput(); err != nil {
		return fmt.Errorf("dev cluster: envoy-gateway certgen: %w: %s", err, strings.TrimSpace(string(out)))
	}
	certs, err := e.envoyCerts(ctx)
	if err != nil {
		return err
	}
	cfg, err := e.envoyConfig()
	if err != nil {
		return err
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		return fmt.Errorf("dev cluster: Envoy Gateway reads its certificate at %s: running it in a mount namespace of its own needs unshare (util-linux): %w", certsPath, err)
	}
	// A bind mount needs an existing mount point; an empty directory is all the host ever sees.
	if err := os.MkdirAll(certsPath, 0o755); err != nil {
		return fmt.Errorf("dev cluster: mount point %s for Envoy Gateway's certificate: %w", certsPath, err)
	}
	_, err = e.startExec(envoyProc, unshare, []string{"--mount", "--propagation", "private", "--",
		"/bin/sh", "-c", `mount --bind "$0" ` + certsPath + ` && exec "$@"`, certs,
		bin, "server", "--config-path", cfg}, env...)
	return err
}

// envoyCerts writes the xDS certificate certgen made (Secret envoy-gateway) into the data
// directory, readable by root only.
func (e *Env) envoyCerts(ctx context.Context) (string, error) {
	dir := filepath.Join(e.Dir, "envoy-gateway", "certs")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	for _, k := range []string{"ca.crt", "tls.crt", "tls.key"} {
		out, err := e.kubectl(ctx, "-n", EnvoyNamespace, "get", "secret", "envoy-gateway",
			"-o", `jsonpath={.data.`+strings.ReplaceAll(k, ".", `\.`)+`}`)
		if err != nil {
			return "", fmt.Errorf("dev cluster: Envoy Gateway certificate: %w", err)
		}
		b, err := base64.StdEncoding.DecodeString(out)
		if err != nil || len(b) == 0 {
			return "", fmt.Errorf("dev cluster: Secret %s/envoy-gateway: key %s missing or not base64", EnvoyNamespace, k)
		}
		if err := os.WriteFile(filepath.Join(dir, k), b, 0o600); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// envoyConfig writes the EnvoyGateway configuration: provider Kubernetes, no leader election
// (one instance), the admin server on a free loopback port.
func (e *Env) envoyConfig() (string, error) {
	port, err := freePorts(1)
	if err != nil {
		return "", err
	}
	path := filepath.Join(e.Dir, "envoy-gateway", "config.yaml")
	return path, os.WriteFile(path, []byte(`apiVersion: gateway.envoyproxy.io/v1alpha1
kind: EnvoyGateway
gateway:
  controllerName: `+EnvoyController+`
provider:
  type: Kubernetes
  kubernetes:
    leaderElection: {disable: true}
logging:
  level: {default: warn}
admin:
  address: {host: 127.0.0.1, port: `+strconv.Itoa(port[0])+`}
`), 0o644)
}

// gatewayObjects are the GatewayClass (its envoy Service asks MetalLB for GatewayAddress) and
// the Gateway slipway-dev/public: TLS passthrough on 443 and HTTP on 80, both admitting routes
// from every namespace.
func gatewayObjects() string {
	return fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata: {name: %[1]s}
---
apiVersion: gateway.envoyproxy.io/v1alpha1
kind: EnvoyProxy
metadata: {name: %[2]s, namespace: %[5]s}
spec:
  provider:
    type: Kubernetes
    kubernetes:
      envoyService:
        annotations: {metallb.universe.tf/loadBalancerIPs: %[6]s}
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: %[2]s}
spec:
  controllerName: %[3]s
  parametersRef: {group: gateway.envoyproxy.io, kind: EnvoyProxy, name: %[2]s, namespace: %[5]s}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: %[4]s, namespace: %[1]s}
spec:
  gatewayClassName: %[2]s
  listeners:
  - name: tls
    protocol: TLS
    port: 443
    tls: {mode: Passthrough}
    allowedRoutes: {namespaces: {from: All}}
  - name: http
    protocol: HTTP
    port: 80
    allowedRoutes: {namespaces: {from: All}}
`, GatewayNamespace, GatewayClass, EnvoyController, GatewayName, EnvoyNamespace, GatewayAddress)
}

// waitGateway waits until the Gateway is Programmed with an address, and returns it.
func (e *Env) waitGateway(ctx context.Context, limit time.Duration) (string, error) {
	var addr string
	err := waitFor(ctx, limit, "Gateway "+Gateway+" Programmed with an address", func() (bool, string) {
		out, err := e.kubectl(ctx, "-n", GatewayNamespace, "get", "gateway", GatewayName, "-o",
			`jsonpath={.status.conditions[?(@.type=="Programmed")].status} {.status.conditions[?(@.type=="Programmed")].reason} {.status.addresses[0].value}`)
		if err != nil {
			return false, err.Error()
		}
		f := strings.Fields(out)
		if len(f) == 3 && f[0] == "True" {
			addr = f[2]
			return true, out
		}
		if pid, _ := readPID(filepath.Join(e.Dir, "pids", envoyProc)); pid > 0 && !alive(pid) {
			return false, "envoy-gateway exited: " + logTail(filepath.Join(e.Dir, "logs", envoyProc+".log"), 10)
		}
		return false, out
	})
	if err != nil {
		return "", errors.Join(err, fmt.Errorf("see %s", filepath.Join(e.Dir, "logs", envoyProc+".log")))
	}
	return addr, nil
}
