package main

// Publish mode (issue 14): the cost of publishing names (SPEC §7) at N nodes × 2 names, in
// one run: the same group's first apply without and with `publish:`, then with it the no-op
// plan and apply (goal: under 1.5 s, no UPDATE), each step's DNS messages counted at a proxy
// in front of the dev environment's Knot.
//
//	go run ./bench -publish -nodes 200 -json publish.json

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"slipway.dev/slipway/internal/devcluster"
	"slipway.dev/slipway/internal/devcluster/devtest"
)

// The publish mode's namespaces (and groups): -publish-namespace P makes them P-plain and
// P-publish, so that a run does not delete another's (setup empties them first).
var (
	nsPlain   = "bench-plain"
	nsPublish = "bench-publish"
)

// PublishRow is one step of the publish mode, with its DNS messages.
type PublishRow struct {
	Step
	Queries int `json:"dnsQueries"`
	Updates int `json:"dnsUpdates"`
}

// PublishResult is the publish mode's outcome.
type PublishResult struct {
	Names int          `json:"namesPerNode"`
	Rows  []PublishRow `json:"rows"`
	// OverheadSeconds is the first apply with publish: less the one without.
	OverheadSeconds float64 `json:"overheadSeconds"`
}

func (b *bench) runPublish(ctx context.Context) {
	if b.env.DNSServer == "" {
		log.Fatal("publish mode: the dev environment has no DNS server (slipway dev up starts Knot)")
	}
	proxy, err := devtest.DNSProxy(b.env.DNSServer)
	if err != nil {
		log.Fatal(err)
	}
	defer proxy.Close()
	root := b.work
	zone := "bench-" + randHex() + "." + devcluster.DNSZone
	res := &PublishResult{Names: 2}
	env := []string{"SLIPWAY_DNS_SERVER=" + proxy.Host(), "SLIPWAY_TSIG_SECRET_FILE=" + b.env.TSIGSecretFile, "SLIPWAY_TSIG_SECRET=", "K8S_GATEWAY="}
	run := func(name string, args ...string) PublishRow {
		proxy.Reset()
		s := b.stepEnv(ctx, env, "slipway", name, b.slipway, args...)
		r := PublishRow{Step: s}
		for _, m := range proxy.Take() {
			if m.Method == "UPDATE" {
				r.Updates++
			} else {
				r.Queries++
			}
		}
		log.Printf("         %d DNS queries, %d UPDATEs", r.Queries, r.Updates)
		res.Rows = append(res.Rows, r)
		return r
	}
	for _, publish := range []bool{false, true} {
		ns, what := nsPlain, "without publish:"
		if publish {
			ns, what = nsPublish, fmt.Sprintf("with publish: (%d names)", 2*b.n)
		}
		b.work = filepath.Join(root, ns)
		if err := writePublishGroup(b.work, b.n, randHex(), ns, zone, publish); err != nil {
			log.Fatal(err)
		}
		first := run("first apply (until all Ready) "+what, "apply", "--yes")
		if publish {
			run("no-op plan "+what, "plan")
			run("no-op apply "+what, "apply", "--yes")
			res.OverheadSeconds = first.WallSeconds - res.Rows[0].WallSeconds
		}
		if d := run("destroy "+what, "destroy", "--yes"); d.Error != "" {
			if err := b.kc.DeleteNamespaceAndWait(ctx, ns, ""); err != nil {
				log.Printf("delete namespace %s: %v", ns, err)
			}
		}
	}
	b.work = root
	b.res.Publish = res
}

// writePublishGroup writes the bench group of n nodes into dir (writeGroup's), and with
// publish: each node published at two names in zone, at its own load-balancer address.
func writePublishGroup(dir string, n int, run, ns, zone string, publish bool) error {
	if err := writeGroup(dir, n, run, ns, ns); err != nil {
		return err
	}
	if !publish {
		return nil
	}
	path := filepath.Join(dir, "slipway.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var y strings.Builder
	for _, l := range strings.SplitAfter(string(data), "\n") {
		if l == "nodes:\n" {
			fmt.Fprintf(&y, "publish:\n  zone: %s\n  addressTimeout: 10m\n  dns: {key: %s}\n", zone, devcluster.TSIGKey)
		}
		y.WriteString(l)
		if name, ok := strings.CutSuffix(strings.TrimPrefix(l, "  "), ":\n"); ok && strings.HasPrefix(l, "  n") && !strings.HasPrefix(l, "   ") {
			fmt.Fprintf(&y, "    publishedNames: [%s.%s, www-%s.%s]\n", name, zone, name, zone)
		}
	}
	return os.WriteFile(path, []byte(y.String()), 0o644)
}

func (b *bench) printPublish(w io.Writer) {
	p := b.res.Publish
	if p == nil {
		return
	}
	m := b.res.Machine
	fmt.Fprintf(w, "\npublish: %d nodes × %d names, --parallelism %s; %d CPUs, %s memory, %s, load at start %s\n\n", b.n, p.Names, parStr(b.parallelism), m.NProc, m.MemoryGiB, m.Go, m.Load)
	fmt.Fprintf(w, "| step | wall s | own API requests | API writes | DNS queries | DNS UPDATEs |\n|---|---:|---:|---:|---:|---:|\n")
	for _, r := range p.Rows {
		wall := fmt.Sprintf("%.2f", r.WallSeconds)
		if r.Error != "" {
			wall += " (failed)"
		}
		fmt.Fprintf(w, "| %s | %s | %d | %d | %d | %d |\n", r.Step.Step, wall, total(r.Requests), r.Writes, r.Queries, r.Updates)
	}
	fmt.Fprintf(w, "\nfirst apply overhead of publishing: %.2f s\n", p.OverheadSeconds)
	for _, r := range p.Rows {
		if strings.HasPrefix(r.Step.Step, "no-op") {
			fmt.Fprintf(w, "%s: %.2f s (goal < 1.5 s: %v), %d UPDATEs (goal 0: %v)\n", r.Step.Step, r.WallSeconds, r.WallSeconds < 1.5, r.Updates, r.Updates == 0)
		}
	}
	for _, n := range slices.Clip(b.res.Notes) {
		fmt.Fprintf(w, "\nnote: %s\n", n)
	}
}
