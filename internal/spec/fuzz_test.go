package spec_test

import (
	"cmp"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"slipway.dev/slipway/internal/spec"
)

// FuzzLoad feeds arbitrary files to the loader: it must never panic, and must either return a
// group that keeps the package's promises or Errors whose every entry names the file and says
// what is wrong. The seed corpus is testdata/fuzz/FuzzLoad plus the examples.
func FuzzLoad(f *testing.F) {
	f.Setenv("APP_TOKEN", "example") // examples/full's secrets read these
	f.Setenv("SSO_CLIENT_SECRET", "example")
	for _, p := range []string{"../../examples/hello/slipway.yaml", "../../examples/full/slipway.yaml"} {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := spec.Parse("slipway.yaml", data, root)
		if err != nil {
			if g != nil {
				t.Fatalf("Parse returned a group and an error: %v", err)
			}
			var errs spec.Errors
			if !errors.As(err, &errs) || len(errs) == 0 {
				t.Fatalf("Parse error is not a non-empty spec.Errors: %T %v", err, err)
			}
			for _, e := range errs {
				if e.File != "slipway.yaml" || e.Msg == "" || e.Line < 0 || strings.Contains(e.Msg, "\n") {
					t.Fatalf("malformed error %#v", e)
				}
			}
			return
		}
		if g == nil {
			t.Fatal("Parse returned neither a group nor an error")
		}
		if !slices.IsSortedFunc(g.Nodes, func(a, b *spec.Node) int { return strings.Compare(a.Name, b.Name) }) {
			t.Fatal("nodes are not sorted")
		}
		for _, n := range g.Nodes {
			srcs := 0
			for _, s := range []string{n.Image.Rootfs, n.Image.Archive, n.Image.Base} {
				if s != "" {
					srcs++
				}
			}
			if srcs != 1 {
				t.Fatalf("node %s has %d image sources", n.Name, srcs)
			}
			if n.Init != spec.InitSystemd && n.Init != spec.InitNone {
				t.Fatalf("node %s init %q", n.Name, n.Init)
			}
			for _, p := range n.Firewall.Published {
				if !slices.Contains(n.Firewall.Served, p) {
					t.Fatalf("node %s publishes %s without serving it", n.Name, p)
				}
			}
			for _, r := range n.Roles {
				if r.Replicas < 0 {
					t.Fatalf("role %s/%s has %d replicas", n.Name, r.Name, r.Replicas)
				}
				checkWorkload(t, n.Name+"/"+r.Name, r.Workload)
			}
			checkWorkload(t, n.Name, n.Workload)
			checkReach(t, n)
			if n.PreStopSleep > 0 && n.PreStopSleep >= cmp.Or(n.StopGracePeriod, spec.DefaultStopGracePeriod) {
				t.Fatalf("node %s sleeps %s before a stop of %s", n.Name, n.PreStopSleep, n.StopGracePeriod)
			}
		}
	})
}

// checkWorkload holds the promises of the workload fields (SPEC §3a): slipway's own labels are
// never the file's, a budget has exactly one bound, a probe has exactly one check.
func checkWorkload(t *testing.T, who string, w spec.Workload) {
	t.Helper()
	for _, m := range []map[string]string{w.Labels, w.Annotations} {
		for k := range m {
			if strings.HasPrefix(k, "slipway.dev/") || k == "app.kubernetes.io/name" || k == "app.kubernetes.io/managed-by" {
				t.Fatalf("%s sets slipway's own key %s", who, k)
			}
		}
	}
	if d := w.Disruption; d != nil && (d.MaxUnavailable == nil) == (d.MinAvailable == nil) {
		t.Fatalf("%s has a budget of %v and %v", who, d.MaxUnavailable, d.MinAvailable)
	}
	for _, p := range []*spec.CheckProbe{w.Probes.Liveness, w.Probes.Startup} {
		if p == nil {
			continue
		}
		checks := 0
		if p.Exec != nil {
			checks++
		}
		if p.HTTP != nil {
			checks++
		}
		if p.TCP != 0 {
			checks++
		}
		if checks != 1 || p.Failures < 1 || p.Period < time.Second {
			t.Fatalf("%s has a probe %+v", who, p)
		}
	}
}

// checkReach holds the promises of firewall.fromNamespaces and firewall.egress: each peer is
// exactly one of a CIDR and a non-empty namespace selector, with ports, and a port admitted
// from other namespaces is one the node or a role of it has.
func checkReach(t *testing.T, n *spec.Node) {
	t.Helper()
	have := slices.Clone(n.Firewall.Served)
	for _, r := range n.Roles {
		have = append(have, r.Ports...)
		if r.Metrics != nil {
			have = append(have, *r.Metrics)
		}
	}
	for _, p := range n.Firewall.FromNamespaces {
		if p.CIDR != "" || len(p.Namespace) == 0 || len(p.Ports) == 0 {
			t.Fatalf("node %s admits %+v", n.Name, p)
		}
		for _, port := range p.Ports {
			if !slices.Contains(have, port) {
				t.Fatalf("node %s admits other namespaces on %s, which it does not have", n.Name, port)
			}
		}
	}
	for _, p := range n.Firewall.Egress {
		if (p.CIDR == "") == (len(p.Namespace) == 0) || len(p.Ports) == 0 || (p.CIDR != "" && p.Pods != nil) {
			t.Fatalf("node %s reaches %+v", n.Name, p)
		}
	}
}
