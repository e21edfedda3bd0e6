package devcluster

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
)

// MetalLB gives LoadBalancer Services an address from a TEST-NET range (SPEC §10). Only its
// controller runs: it assigns addresses; announcing them (the speaker) has no network to do it
// on here.
//
// Three pools: every Service gets an address from MetalLBRange (TEST-NET-1) first, and from
// the benchmarking range MetalLBOverflow once a cluster holds more than 256 LoadBalancer
// Services (a 1000-node benchmark does); MetalLBReserved (TEST-NET-3) is handed out only on
// request, so the Gateway's address (GatewayAddress) and a test's pinned one are always free.
const (
	MetalLBNamespace = "metallb-system"
	MetalLBPool      = "dev"
	MetalLBRange     = "192.0.2.0/24"   // TEST-NET-1 (RFC 5737)
	MetalLBOverflow  = "198.18.0.0/15"  // benchmarking (RFC 2544), pool dev-overflow
	MetalLBReserved  = "203.0.113.0/24" // TEST-NET-3, pool reserved, never assigned unasked
	metallbModule    = "go.universe.tf/metallb"
	metallbProc      = "metallb-controller"
)

// metallbObjects are MetalLB's namespace and pools. No pool hands out an address ending in .0
// or .255 (avoidBuggyIPs): 192.0.2.0 is the range's network address, which some clients and
// tools refuse or take for the network itself.
func metallbObjects() string {
	return fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata: {name: %[1]s}
---
apiVersion: metallb.io/v1beta1
kind: IPAddressPool
metadata: {name: %[2]s, namespace: %[1]s}
spec:
  addresses: [%[3]s]
  avoidBuggyIPs: true
  serviceAllocation: {priority: 1}
---
apiVersion: metallb.io/v1beta1
kind: IPAddressPool
metadata: {name: dev-overflow, namespace: %[1]s}
spec:
  addresses: [%[4]s]
  avoidBuggyIPs: true
---
apiVersion: metallb.io/v1beta1
kind: IPAddressPool
metadata: {name: reserved, namespace: %[1]s}
spec:
  addresses: [%[5]s]
  avoidBuggyIPs: true
  autoAssign: false
`, MetalLBNamespace, MetalLBPool, MetalLBRange, MetalLBOverflow, MetalLBReserved)
}

// startMetalLB installs MetalLB's CRDs (its module's config/crd/bases), its namespace and the
// pool, then starts its controller with webhooks off (no webhook Service can reach a process on
// the host).
func (e *Env) startMetalLB(ctx context.Context, progress io.Writer) error {
	bin, cache, err := ensureTool(ctx, "metallb", progress)
	if err != nil {
		return err
	}
	dir, err := moduleDir(ctx, filepath.Join(cache, "src", "metallb"), metallbModule)
	if err != nil {
		return err
	}
	crds, err := yamlFiles(filepath.Join(dir, "config", "crd", "bases"))
	if err != nil {
		return fmt.Errorf("dev cluster: MetalLB CRDs: %w", err)
	}
	fmt.Fprintln(progress, "dev: starting MetalLB's controller (pool "+MetalLBPool+": "+MetalLBRange+")")
	if err := e.applyFiles(ctx, "MetalLB CRDs", crds); err != nil {
		return err
	}
	if err := e.kubectlApply(ctx, metallbObjects()); err != nil {
		return err
	}
	port, err := freePorts(1)
	if err != nil {
		return err
	}
	_, err = e.startExec(metallbProc, bin, []string{
		"--kubeconfig=" + e.Kubeconfig, "--namespace=" + MetalLBNamespace, "--webhook-mode=disabled",
		// Its metrics port defaults to a fixed 7472 on every interface.
		"--port=" + strconv.Itoa(port[0]), "--log-level=warn",
	})
	return err
}
