// Command bench measures slipway's plan and apply side by side with kubectl and Helm on the
// dev cluster (issue 8):
//
//	go run ./bench -nodes 200 -json out.json
//
// It starts or reuses the dev cluster, writes a group of N nodes (each a Deployment, a claim, a
// ServiceAccount, a Service publishing port 80 and a NetworkPolicy, a tiny rootfs of its own),
// builds slipway once, and runs in one go:
//
//	slipway: first apply (until all Ready), no-op apply, plan, one node's rootfs changed, destroy
//	kubectl: apply --server-side + wait --for=condition=Available, no-op apply,
//	         diff --server-side, delete namespace (the objects of `slipway render`)
//	helm v4: install --wait, no-op upgrade --wait, uninstall --wait (a chart of the same objects)
//
// and the cluster's floor (first object created → last Deployment Available, from the objects'
// timestamps) of slipway's and kubectl's first apply. For every step it reports the wall time,
// the tool's own API requests by verb (counted at a proxy every tool talks through) and the
// API server's apiserver_request_total by verb before and after (the whole cluster: controllers
// and other clients included), and slipway's ratio to each peer. The bench is a command, part
// of no test run.
//
// With -repeat N it runs the tools N times, alternating which goes first, each time with
// images new to the registry, and judges slipway's first apply against kubectl's floor (issue
// 17) on the median of the repeats; issue 8's ratios come from the first repeat.
//
// With -real (issue 34) the peer mode's nodes really run, on the dev cluster's real kubelet
// node (each a busybox httpd on port 80, `init: none`, placed on the node): slipway's first
// apply against kubectl apply + wait of the same objects, with real containers.
//
//	go run ./bench -real -nodes 10 -skip-helm
//
// Publish mode (issue 14), `go run ./bench -publish -nodes 200`, runs the group without and
// with `publish:` (two names per node, on the dev environment's Knot) and the no-op plan and
// apply of the published group, counting DNS queries and UPDATEs at a proxy.
//
// Waves mode (issue 38), `go run ./bench -waves`, applies one waves file of 50 groups of 4 nodes
// in 5 waves, against kubectl apply + wait of the same objects wave by wave, and its no-op.
//
// Tenants mode (issue 46), `go run ./bench -tenants`, applies 100 deployments of 4 nodes (25
// group files, each two apps deployed as targets under two deployment ids) by 10 slipway runs
// at once, against kubectl apply + wait of the same objects 10 at a time and the cluster's
// floor, and counts lost locks and cross writes.
//
// Scale mode (issue 17) runs slipway alone, in namespace bench-scale, at each group size:
//
//	go run ./bench -scale -sizes 200,1000,2000 -profile -json scale.json -svg scale.svg
//
// per size: first apply, the cluster's floor, no-op apply, plan, destroy, each with its wall
// time, the process's peak RSS (the kernel's Maxrss of the child), requests by verb and writes;
// a table, and a plot of time and memory against N. -profile has slipway write CPU and heap
// profiles of the no-op apply and plan (SLIPWAY_CPUPROFILE, SLIPWAY_MEMPROFILE) next to the
// group.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	"slipway.dev/slipway/internal/devcluster"
	"slipway.dev/slipway/internal/devcluster/devtest"
	"slipway.dev/slipway/internal/kube"
)

const helmModule = "helm.sh/helm/v4/cmd/helm@v4.3.1"

// The peer mode's namespaces and group; -real has its own (realNamespaces), so that it runs
// beside a peer run on the kwok nodes.
var (
	nsSlipway = "bench-slipway"
	nsKubectl = "bench-kubectl"
	nsHelm    = "bench-helm"
	group     = "bench-slipway"
)

// Step is one measured command.
type Step struct {
	Tool        string  `json:"tool"`
	Step        string  `json:"step"`
	WallSeconds float64 `json:"wallSeconds"`
	// Requests are the tool's own API requests by verb, counted at the proxy it talks through
	// (LIST and WATCH told from GET by the URL; dry runs counted apart as "<VERB> dry-run").
	Requests map[string]int `json:"requests"`
	// Writes are the tool's own non-dry-run POST, PUT, PATCH, DELETE and DELETECOLLECTION.
	Writes int `json:"writes"`
	// PeakRSSMB is the command's peak resident set (the kernel's Maxrss of the child), MiB.
	PeakRSSMB float64 `json:"peakRSSMB"`
	// CPUSeconds is the command's CPU, user + system (the kernel's rusage of the child).
	CPUSeconds float64 `json:"cpuSeconds"`
	// ClusterCPU is the CPU each process of the dev cluster spent over the step (seconds, by
	// component): on a machine of 2 cores, the cores the command shares.
	ClusterCPU map[string]float64 `json:"clusterCPUSeconds,omitempty"`
	// ParentRSSMB is the bench's own resident set when the command started (runMeasured): a
	// PeakRSSMB not above it may be the bench's.
	ParentRSSMB float64 `json:"parentRSSMB,omitempty"`
	// Cluster is the change of apiserver_request_total by verb, dry runs excluded, over the
	// step: every client of the API server (controllers, kwok, other tests) included.
	Cluster map[string]int `json:"cluster"`
	Error   string         `json:"error,omitempty"`
	// Start is when the command started; Log is the file of its output.
	Start time.Time `json:"start"`
	Log   string    `json:"log,omitempty"`
	// Repeat is the peer mode's repeat the step belongs to (-repeat), from 0.
	Repeat int `json:"repeat,omitempty"`
}

// Ratio compares slipway with a peer on one step.
type Ratio struct {
	Step    string  `json:"step"`
	Peer    string  `json:"peer"`
	Slipway float64 `json:"slipwaySeconds"`
	Other   float64 `json:"peerSeconds"`
	Ratio   float64 `json:"ratio"` // slipway / peer
}

// Target is one goal of issue 8.
type Target struct {
	Goal  string `json:"goal"`
	Value string `json:"value"`
	Met   bool   `json:"met"`
}

// Result is the JSON document of a run.
type Result struct {
	Command     string             `json:"command"`
	Time        time.Time          `json:"time"`
	Machine     Machine            `json:"machine"`
	Nodes       int                `json:"nodes"`
	Parallelism int                `json:"parallelism"`
	Steps       []Step             `json:"steps"`
	Floors      map[string]float64 `json:"floorSeconds"`
	Ratios      []Ratio            `json:"ratios"`
	Targets     []Target           `json:"targets"`
	Notes       []string           `json:"notes,omitempty"`
	// Pairs are the peer mode's repeats: slipway's first apply against kubectl's floor in each.
	Pairs []Pair `json:"pairs,omitempty"`
	// Scale holds the scale mode's rows, one per group size.
	Scale []ScaleRow `json:"scale,omitempty"`
	// Publish holds the publish mode's steps.
	Publish *PublishResult `json:"publish,omitempty"`
	// Tenants holds the tenants mode's counts.
	Tenants *TenantsResult `json:"tenants,omitempty"`
}

// Machine describes where the run happened.
type Machine struct {
	NProc     int    `json:"nproc"`
	MemoryGiB string `json:"memory"`
	Go        string `json:"go"`
	Load      string `json:"loadAverage"`
}

func main() {
	home, _ := os.UserHomeDir()
	nodes := flag.Int("nodes", 200, "nodes in the group")
	parallelism := flag.Int("parallelism", 0, "slipway --parallelism (0: slipway's default)")
	jsonOut := flag.String("json", "", "write the results as JSON to this file")
	cache := flag.String("cache", filepath.Join(home, ".cache", "slipway", "bench"), "directory for helm and work files")
	skipKubectl := flag.Bool("skip-kubectl", false, "do not run kubectl")
	skipHelm := flag.Bool("skip-helm", false, "do not run Helm")
	repeat := flag.Int("repeat", 1, "peer mode: run slipway and its peers this many times, alternating which goes first, each time with images new to the registry (issue 17)")
	waitLimit := flag.Duration("wait", 15*time.Minute, "time limit of every wait (kubectl wait, helm --wait)")
	scale := flag.Bool("scale", false, "scale mode: slipway alone at each of -sizes nodes (issue 17)")
	sizes := flag.String("sizes", "200,1000,2000", "scale mode: group sizes, comma-separated")
	profile := flag.Bool("profile", false, "scale mode: CPU and heap profiles of the no-op apply and plan, into the run's directory")
	svgOut := flag.String("svg", "", "scale mode: write the plot of time and memory against N to this file (default: the run's directory)")
	publish := flag.Bool("publish", false, "publish mode: the group of -nodes nodes without and with publish: (2 names each), and its no-op plan and apply (issue 14)")
	replot := flag.String("replot", "", "scale mode: redraw the plot from this JSON result of an earlier run into -svg, and stop")
	flag.StringVar(&nsScale, "scale-namespace", nsScale, "scale mode: the namespace (and group) of the group (another bench run on the cluster deletes bench-scale at its start)")
	publishNS := flag.String("publish-namespace", "bench", "publish mode: the prefix of its two namespaces, <prefix>-plain and <prefix>-publish")
	realNode := flag.Bool("real", false, "peer mode on the dev cluster's real node: every node really runs there (busybox httpd on 80, init: none), in namespaces of their own (issue 34)")
	wavesMode := flag.Bool("waves", false, "waves mode: -groups groups of -group-nodes nodes in -wave-count waves, one waves file, against kubectl apply + wait wave by wave (issue 38)")
	wavesGroups := flag.Int("groups", 50, "waves mode: groups")
	wavesNodes := flag.Int("group-nodes", 4, "waves mode: nodes per group")
	wavesCount := flag.Int("wave-count", 5, "waves mode: waves, each group depending on every group of the wave before")
	tenantsMode := flag.Bool("tenants", false, "tenants mode: -deployments deployments of -group-nodes nodes (per group file two apps, each a target under two deployment ids), applied by -runs slipway runs at once, against kubectl apply + wait of the same objects with the same concurrency; lost locks and cross writes counted (issue 46)")
	tenantsDeps := flag.Int("deployments", 100, "tenants mode: deployments, a multiple of 4")
	tenantsRuns := flag.Int("runs", 10, "tenants mode: runs at once")
	devDir := flag.String("dev-dir", "", "run on a core dev cluster of its own in this directory (started as by slipway --dir DIR dev up --core when not running), not on the shared one")
	flag.Parse()
	nsPlain, nsPublish = *publishNS+"-plain", *publishNS+"-publish"
	log.SetFlags(log.Ltime)
	if *replot != "" {
		if err := replotFrom(*replot, *svgOut); err != nil {
			log.Fatal(err)
		}
		return
	}

	ctx := context.Background()
	b := &bench{n: *nodes, parallelism: *parallelism, waitLimit: *waitLimit,
		res: Result{Command: "go run ./bench " + strings.Join(os.Args[1:], " "), Time: time.Now().UTC(),
			Nodes: *nodes, Parallelism: *parallelism, Machine: machine(), Floors: map[string]float64{}}}
	b.scale = *scale || *publish // neither runs the peers
	b.publish = *publish
	b.devDir = *devDir
	if b.real = *realNode; b.real {
		if b.scale {
			log.Fatal("-real: only the peer mode runs on the real node")
		}
		realNamespaces()
	}
	if b.devDir != "" && b.publish {
		log.Fatal("-dev-dir: the publish mode needs the publishing parts of the shared dev cluster")
	}
	if *wavesMode {
		if b.scale || b.real {
			log.Fatal("-waves: runs alone")
		}
		b.waves = &wavesSpec{groups: *wavesGroups, nodes: *wavesNodes, waves: *wavesCount}
		if b.waves.groups < 1 || b.waves.nodes < 1 || b.waves.waves < 1 || b.waves.waves > b.waves.groups {
			log.Fatalf("-waves: want groups >= waves >= 1 and nodes >= 1")
		}
	}
	if *tenantsMode {
		if b.scale || b.real || b.waves != nil {
			log.Fatal("-tenants: runs alone")
		}
		b.tenants = &tenantsSpec{deployments: *tenantsDeps, nodes: *wavesNodes, runs: *tenantsRuns}
		if b.tenants.deployments < 4 || b.tenants.deployments%4 != 0 || b.tenants.nodes < 1 || b.tenants.runs < 1 {
			log.Fatal("-tenants: want -deployments a multiple of 4, -group-nodes >= 1, -runs >= 1")
		}
	}
	ns, err := parseSizes(*sizes)
	if err != nil {
		log.Fatal(err)
	}
	if err := b.setup(ctx, *cache, *skipKubectl, *skipHelm); err != nil {
		log.Fatal(err)
	}
	defer b.proxy.Close()

	if *publish {
		b.runPublish(ctx)
		b.printPublish(os.Stdout)
		writeJSON(b.res, *jsonOut)
		return
	}
	if b.tenants != nil {
		b.runTenants(ctx, *b.tenants)
		b.printTenants(os.Stdout, *b.tenants)
		writeJSON(b.res, *jsonOut)
		return
	}
	if b.waves != nil {
		b.runWaves(ctx, *b.waves, *profile)
		b.printWaves(os.Stdout, *b.waves)
		writeJSON(b.res, *jsonOut)
		return
	}
	if b.scale {
		b.runScale(ctx, ns, *profile, *svgOut, *jsonOut)
		return
	}
	if *repeat < 1 {
		log.Fatalf("-repeat %d: must be at least 1", *repeat)
	}
	for r := range *repeat {
		if err := b.runRepeat(ctx, r, *skipKubectl); err != nil {
			log.Fatal(err)
		}
	}
	b.summarise()
	b.print(os.Stdout)
	if *jsonOut != "" {
		data, _ := json.MarshalIndent(b.res, "", "  ")
		if err := os.WriteFile(*jsonOut, append(data, '\n'), 0o644); err != nil {
			log.Fatal(err)
		}
		log.Printf("results written to %s", *jsonOut)
	}
}

type bench struct {
	n           int
	parallelism int
	waitLimit   time.Duration
	scale       bool
	publish     bool
	devDir      string       // -dev-dir: a core dev cluster of its own
	real        bool         // -real: the nodes run on the real node
	waves       *wavesSpec   // -waves: the waves mode's shape
	tenants     *tenantsSpec // -tenants: the tenants mode's shape

	env        *devcluster.Env
	kc         *kube.Client
	work       string // this run's directory
	slipway    string // binary
	helm       string // binary, "" without Helm
	kubeconfig string // points at the counting proxy
	proxy      *devtest.Proxy
	toolEnv    []string
	res        Result

	// repeat is the peer mode's repeat in progress, run its run marker, floors the floors
	// measured in it (by tool).
	repeat int
	run    string
	floors map[string]float64
}

// writeJSON writes res to path, when one is given.
func writeJSON(res Result, path string) {
	if path == "" {
		return
	}
	data, _ := json.MarshalIndent(res, "", "  ")
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		log.Fatal(err)
	}
	log.Printf("results written to %s", path)
}
