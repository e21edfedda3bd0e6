package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slipway.dev/slipway/internal/state"
)

// WithEnv adds environment variables (KEY=VALUE) to every later run of the binary; a later
// value of a key wins over the dev cluster's.
func (g *Group) WithEnv(kv ...string) *Group {
	g.extraEnv = append(g.extraEnv, kv...)
	return g
}

// StateView is `slipway state show -o json`.
type StateView struct {
	Group    string          `json:"group"`
	Location string          `json:"location"`
	State    *state.Document `json:"state"`
	Lock     *struct {
		ID      string `json:"ID"`
		Info    string `json:"Info"`
		PID     int    `json:"PID"`
		Process string `json:"process"`
	} `json:"lock"`
}

// State runs `state show -o json` and parses it; no state and no lock is the zero view.
func (g *Group) State() StateView { return g.showState("state", "show", "-o", "json") }

// showState runs `state show` with args: its JSON, or the zero view when it says there is no
// state (exit 1, "no state of <key> at <location>").
func (g *Group) showState(args ...string) StateView {
	g.t.Helper()
	r := g.Run(args...)
	if r.Code == 1 && strings.Contains(r.Stderr, "state show: no state of ") {
		return StateView{}
	}
	if r.Code != 0 {
		g.t.Fatalf("slipway %s: %s", strings.Join(args, " "), r)
	}
	var v StateView
	if err := json.Unmarshal([]byte(r.Stdout), &v); err != nil {
		g.t.Fatalf("state show -o json: %v\n%s", err, r)
	}
	return v
}

// PodUIDs maps each pod of the group's namespace (by name) to its UID.
func (g *Group) PodUIDs() map[string]string {
	g.t.Helper()
	pods, err := g.Kube.Clientset.CoreV1().Pods(g.Name).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		g.t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			out[p.Name] = string(p.UID)
		}
	}
	return out
}

// DeploymentPods maps each Deployment of the namespace to the UIDs of its live pods (sorted),
// by the pods' app.kubernetes.io/name label.
func (g *Group) DeploymentPods() map[string][]string {
	g.t.Helper()
	pods, err := g.Kube.Clientset.CoreV1().Pods(g.Name).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		g.t.Fatal(err)
	}
	out := map[string][]string{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		n := p.Labels["app.kubernetes.io/name"]
		out[n] = append(out[n], string(p.UID))
	}
	for _, v := range out {
		slices.Sort(v)
	}
	return out
}

// RepoTags lists the tags of <registry>/<ns>/<repo>; nil when the repository does not exist.
func (g *Group) RepoTags(repo string) []string {
	g.t.Helper()
	r, err := name.NewRepository(g.Env.Registry+"/"+g.Name+"/"+repo, name.Insecure)
	if err != nil {
		g.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tags, err := remote.List(r, remote.WithContext(ctx))
	var te *transport.Error
	if errors.As(err, &te) && te.StatusCode == http.StatusNotFound {
		return nil
	}
	if err != nil {
		g.t.Fatalf("list %s: %v", r, err)
	}
	return tags
}

// NamespaceExists reports whether the group's namespace exists (terminating counts).
func (g *Group) NamespaceExists() bool {
	g.t.Helper()
	_, err := g.Kube.Clientset.CoreV1().Namespaces().Get(context.Background(), g.Name, metav1.GetOptions{})
	if err == nil {
		return true
	}
	if apierrors.IsNotFound(err) {
		return false
	}
	g.t.Fatal(err)
	return false
}

// PlanView is `plan -o json`.
type PlanView struct {
	Changes bool `json:"changes"`
	Counts  struct {
		Push, Create, Update, Replace, Delete int
	} `json:"counts"`
	StateSerial int64 `json:"stateSerial"`
	Images      []struct {
		Name string `json:"name"`
		Node string `json:"node"`
		Tag  string `json:"tag"`
		Push bool   `json:"push"`
	} `json:"images"`
	// GroupChanges are the group's own objects: its namespace and default-deny policy.
	GroupChanges []PlanChange `json:"groupChanges"`
	Nodes        []struct {
		Node    string       `json:"node"`
		Removed bool         `json:"removed"`
		Changes []PlanChange `json:"changes"`
	} `json:"nodes"`
}

// PlanChange is one change of `plan -o json`.
type PlanChange struct {
	Key struct {
		Kind, Namespace, Name string
	} `json:"key"`
	Action      string `json:"action"`
	Destructive bool   `json:"destructive"`
}

func (c PlanChange) line(owner string) string {
	l := owner + ": " + c.Action + " " + c.Key.Kind + "/" + c.Key.Name
	if c.Destructive {
		l += " destructive"
	}
	return l
}

// Plan runs `plan -o json` (exit 0) and parses it.
func (g *Group) Plan() PlanView {
	g.t.Helper()
	r := g.MustRun(0, "plan", "-o", "json")
	var v PlanView
	if err := json.Unmarshal([]byte(r.Stdout), &v); err != nil {
		g.t.Fatalf("plan -o json: %v\n%s", err, r)
	}
	return v
}

// ChangeLines are the plan's changes as "node: action Kind/name[ destructive]" ("group: …" for the group's own objects), and its pushes
// as "node: push image".
func (v PlanView) ChangeLines() []string {
	var out []string
	for _, im := range v.Images {
		if im.Push {
			out = append(out, im.Node+": push "+im.Name)
		}
	}
	for _, c := range v.GroupChanges {
		out = append(out, c.line("group"))
	}
	for _, n := range v.Nodes {
		for _, c := range n.Changes {
			out = append(out, c.line(n.Node))
		}
	}
	slices.Sort(out)
	return out
}
