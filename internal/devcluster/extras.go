package devcluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// extras are the publishing parts of SPEC §10, started after the core components. dev up
// starts the missing ones on a running cluster too, so a slipway that brings a new part adds
// it without restarting the cluster others are using. Each is named after its binary; Down
// stops them before the core.
var extras = []string{metallbProc, envoyProc}

// extraRunning reports whether the extra name runs from the PID recorded in dir.
func extraRunning(dir, name string) bool {
	pid, err := readPID(filepath.Join(dir, "pids", name))
	return err == nil && alive(pid) && runsBinary(pid, name)
}

// runsBinary reports whether pid runs an executable called name: the extras live in caches of
// their own (or are wrapped by unshare, which execs them), so their directory is not BinDir.
func runsBinary(pid int, name string) bool {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	return err == nil && filepath.Base(strings.TrimSuffix(exe, " (deleted)")) == name
}

// buildExtras builds the tools of the extras that are not in their caches yet.
func buildExtras(ctx context.Context, progress io.Writer) error {
	for _, t := range tools {
		if t.own && !t.node && !t.spire && !t.secrets && !t.central {
			if _, _, err := ensureTool(ctx, t.module, progress); err != nil {
				return err
			}
		}
	}
	return nil
}

// ensurePublishing starts whichever publishing part is not running and applies the Gateway, then
// waits for it to be Programmed. With everything running it asks the cluster nothing. On a
// cluster that was already running (fresh = false) a Gateway still not Programmed is a warning,
// not an error: the tests that do not publish go on, and the next dev up does not wait again.
func (e *Env) ensurePublishing(ctx context.Context, fresh bool, progress io.Writer) error {
	running := map[string]bool{}
	all := true
	for _, x := range extras {
		running[x] = extraRunning(e.Dir, x)
		all = all && running[x]
	}
	if all {
		// Whoever started them applied the Gateway (cluster.json may have been written since by
		// a slipway that does not know the field), and the pools and Gateway objects as that
		// slipway wrote them: this one's are applied when they differ.
		if e.Gateway != "" && e.PublishingObjects == publishingDigest() {
			return nil
		}
		e.Gateway = Gateway
		return e.applyPublishingObjects(ctx)
	}
	if !running[envoyProc] {
		if why := envoyPortsTaken(); why != "" {
			if fresh {
				return fmt.Errorf("dev environment: publishing: %s", why)
			}
			fmt.Fprintf(progress, "dev: warning: no publishing parts: %s\n", why)
			return nil
		}
	}
	start := time.Now()
	envoyBin, envoyCache, err := ensureTool(ctx, "envoy-gateway", progress)
	if err != nil {
		return err
	}
	fmt.Fprintln(progress, "dev: installing the Gateway API CRDs "+GatewayAPIVersion+" (standard channel)")
	if err := e.gatewayAPICRDs(ctx, envoyCache); err != nil {
		return err
	}
	if !running[metallbProc] {
		if err := e.startMetalLB(ctx, progress); err != nil {
			return err
		}
	}
	if !running[envoyProc] {
		if err := e.startEnvoyGateway(ctx, envoyBin, envoyCache, progress); err != nil {
			return err
		}
	}
	e.Gateway = Gateway
	if err := e.applyPublishingObjects(ctx); err != nil {
		return err
	}
	limit := 3 * time.Minute
	if !fresh { // others' tests wait for the cluster's lock meanwhile
		limit = time.Minute
	}
	addr, err := e.waitGateway(ctx, limit)
	if err != nil && fresh {
		return err
	}
	if err != nil {
		fmt.Fprintf(progress, "dev: warning: %v\n", err)
		return nil
	}
	fmt.Fprintf(progress, "dev: Gateway %s Programmed at %s (publishing parts ready in %s)\n", Gateway, addr, time.Since(start).Round(100*time.Millisecond))
	return nil
}

// publishingDigest names the MetalLB pools and Gateway objects this slipway applies.
func publishingDigest() string {
	sum := sha256.Sum256([]byte(metallbObjects() + gatewayObjects()))
	return hex.EncodeToString(sum[:8])
}

// applyPublishingObjects applies the MetalLB pools and the Gateway objects (a server-side
// apply: idempotent) and records which it applied in cluster.json.
func (e *Env) applyPublishingObjects(ctx context.Context) error {
	if err := e.kubectlApply(ctx, metallbObjects()+"---\n"+gatewayObjects()); err != nil {
		return err
	}
	e.PublishingObjects = publishingDigest()
	return e.save()
}

// envoyFixedPorts are the ports Envoy Gateway binds on every interface whatever its
// configuration says (its xDS server and its health probe): only one environment per machine
// can run it.
var envoyFixedPorts = []int{18000, 8081}

// envoyPortsTaken says which of envoyFixedPorts another program holds (another dev
// environment's Envoy Gateway, most likely), "" when they are free: Envoy Gateway started anyway
// exits with "address already in use", and the Gateway is never Programmed.
func envoyPortsTaken() string {
	for _, port := range envoyFixedPorts {
		l, err := net.Listen("tcp", fmt.Sprintf(":%d", port))
		if err != nil {
			return fmt.Sprintf("port %d, which Envoy Gateway binds whatever its configuration, is taken (another dev environment's publishing parts?): one environment per machine can have them; start this one without --publish", port)
		}
		l.Close()
	}
	return ""
}
