package spec_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"slipway.dev/slipway/internal/spec"
)

// roleInputsFile has a node with env, files, config and secrets, and roles that take them
// or set their own (SPEC §3a).
var roleInputsFile = web(
	"    env: {TZ: UTC, TOKEN: {secret: app, key: token}}",
	"    files: [{path: /etc/app, config: app}]",
	"    config:",
	"      app: {files: {app.conf: conf/app.conf}}",
	"    secrets:",
	"      app: {fromEnv: {token: SLIPWAY_TEST_TOKEN}}",
	"    roles:",
	"      plain: {}",
	"      own:",
	"        env: {LEVEL: {config: app, key: app.conf}, NODE_TOKEN: {secret: app, key: token}}",
	"        config:",
	"          app: {files: {app.conf: conf/app.conf}}",
	"        secrets:",
	"          worker: {fromEnv: {key: SLIPWAY_TEST_ROLE_TOKEN}}",
	"      svc:",
	"        service: {image: {archive: build/sso.tar}, environment: {A: b}}",
	"        env: {KEY: {secret: worker, key: key}}",
	"        secrets:",
	"          worker: {fromEnv: {key: SLIPWAY_TEST_ROLE_TOKEN}}",
)

// TestLoadRoleInputs: a role without env takes the node's, one with env its own; a role
// without service mounts the node's files; a role's config and secrets are objects
// <node>-<role>-<name>, and a name it lacks means the node's entry.
func TestLoadRoleInputs(t *testing.T) {
	t.Setenv("SLIPWAY_TEST_TOKEN", "node-value")
	t.Setenv("SLIPWAY_TEST_ROLE_TOKEN", "role-value")
	g, err := spec.Parse("slipway.yaml", []byte(roleInputsFile), root)
	if err != nil {
		t.Fatal(err)
	}
	n := g.Nodes[0]
	type view struct {
		Env              map[string]string
		EnvRefs          []string
		Files            []string
		Configs, Secrets []string // objects the node or role makes
		AppConfig        string   // the object a reference to config app means
		AppSecret        string
		WorkerSecret     string
	}
	look := func(in *spec.PodInputs) view {
		v := view{Env: in.Env}
		for k, r := range in.EnvRefs {
			v.EnvRefs = append(v.EnvRefs, k+"="+in.ObjectName(r.Secret, r.Config)+"/"+r.Key)
		}
		for _, f := range in.Files {
			v.Files = append(v.Files, f.Path+"="+in.ObjectName(f.Secret, f.Config))
		}
		for _, c := range in.Config {
			v.Configs = append(v.Configs, c.Object)
		}
		for _, s := range in.Secrets {
			v.Secrets = append(v.Secrets, s.Object)
		}
		v.AppConfig, v.AppSecret, v.WorkerSecret = in.ObjectName("", "app"), in.ObjectName("app", ""), in.ObjectName("worker", "")
		return v
	}
	sortRefs := cmp.Transformer("sort", func(s []string) string { return strings.Join(sorted(s), ",") })
	tests := []struct {
		name string
		in   *spec.PodInputs
		want view
	}{
		{"node", &n.PodInputs, view{Env: map[string]string{"TZ": "UTC"}, EnvRefs: []string{"TOKEN=web-app/token"},
			Files: []string{"/etc/app=web-app"}, Configs: []string{"web-app"}, Secrets: []string{"web-app"},
			AppConfig: "web-app", AppSecret: "web-app", WorkerSecret: "worker"}},
		{"role without inputs takes the node's", &n.Role("plain").PodInputs, view{Env: map[string]string{"TZ": "UTC"},
			EnvRefs: []string{"TOKEN=web-app/token"}, Files: []string{"/etc/app=web-app"},
			AppConfig: "web-app", AppSecret: "web-app", WorkerSecret: "worker"}},
		{"role with its own", &n.Role("own").PodInputs, view{Env: map[string]string{},
			EnvRefs: []string{"LEVEL=web-own-app/app.conf", "NODE_TOKEN=web-app/token"}, Files: []string{"/etc/app=web-own-app"},
			Configs: []string{"web-own-app"}, Secrets: []string{"web-own-worker"},
			AppConfig: "web-own-app", AppSecret: "web-app", WorkerSecret: "web-own-worker"}},
		{"service role: its own env only, no files", &n.Role("svc").PodInputs, view{Env: map[string]string{},
			EnvRefs: []string{"KEY=web-svc-worker/key"}, Secrets: []string{"web-svc-worker"},
			AppConfig: "web-app", AppSecret: "web-app", WorkerSecret: "web-svc-worker"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, look(tt.in), sortRefs); diff != "" {
				t.Errorf("inputs (-want +got):\n%s", diff)
			}
		})
	}
	// The same value in the node's and a role's Secret hashes apart: the hash is salted with
	// the object's name, so a plan does not show that two Secrets hold the same value.
	own, _ := n.Role("own").OwnSecret("worker")
	svc, _ := n.Role("svc").OwnSecret("worker")
	if own.Hash == svc.Hash || own.Hash == "" {
		t.Errorf("Secrets web-own-worker and web-svc-worker hash alike: %s", own.Hash)
	}
}

// TestParseInvalidRoleInputs: a role's env, config and secrets follow the node's rules, each
// bad value one message at its line; their objects' names are checked with the others.
func TestParseInvalidRoleInputs(t *testing.T) {
	t.Setenv("SLIPWAY_TEST_TOKEN", "x")
	tests := []struct {
		name string
		file string
		want []string
	}{
		{"missing variable of a role's secret", web(
			"    roles:",
			"      worker:",
			"        secrets: {app: {fromEnv: {token: SLIPWAY_TEST_UNSET_TOKEN}}}",
		), []string{`slipway.yaml:7: nodes.web.roles.worker.secrets.app.fromEnv.token: environment variable SLIPWAY_TEST_UNSET_TOKEN is not set`}},
		{"a role's reference to a key its config lacks", web(
			"    roles:",
			"      worker:",
			"        config: {app: {files: {app.conf: conf/app.conf}}}",
			"        env: {LEVEL: {config: app, key: level}}",
		), []string{`slipway.yaml:8: nodes.web.roles.worker.env.LEVEL: config app has no key level`}},
		{"a role's reference to a key the node's secret lacks", web(
			"    secrets: {app: {fromEnv: {token: SLIPWAY_TEST_TOKEN}}}",
			"    roles:",
			"      worker:",
			"        env: {KEY: {secret: app, key: key}}",
		), []string{`slipway.yaml:8: nodes.web.roles.worker.env.KEY: secret app has no key key`}},
		{"a role's env name slipway sets", web(
			"    roles:",
			"      worker: {env: {SLIPWAY_ROLE: x}}",
		), []string{`slipway.yaml:6: nodes.web.roles.worker.env.SLIPWAY_ROLE: SLIPWAY_ROLE is set by slipway`}},
		{"a variable in a service role's env and environment", web(
			"    roles:",
			"      sso:",
			"        service: {image: {archive: build/sso.tar}, environment: {LEVEL: info}}",
			"        env: {LEVEL: debug}",
		), []string{`slipway.yaml:8: nodes.web.roles.sso.env.LEVEL: LEVEL is also in service.environment: set it once`}},
		{"a role has no files", web(
			"    roles:",
			"      worker: {files: [{path: /etc/app, config: app}]}",
		), []string{`slipway.yaml:6: nodes.web.roles.worker.files: unknown field "files"`}},
		{"a role's ConfigMap collides with the node's", web(
			"    config: {worker-app: {files: {app.conf: conf/app.conf}}}",
			"    roles:",
			"      worker:",
			"        config: {app: {files: {app.conf: conf/app.conf}}}",
		), []string{`slipway.yaml:7: nodes.web.roles.worker: ConfigMap web-worker-app collides with the one of node web`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkErrors(t, tt.file, tt.want) })
	}
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

// TestParseInvalidServiceMonitor: serviceMonitor is a boolean and needs the role's metrics.
func TestParseInvalidServiceMonitor(t *testing.T) {
	tests := []struct {
		name string
		file string
		want []string
	}{
		{"without metrics", web(
			"    roles:",
			"      worker: {serviceMonitor: true}",
		), []string{`slipway.yaml:6: nodes.web.roles.worker.serviceMonitor: needs metrics: a ServiceMonitor scrapes the metrics Service`}},
		{"not a boolean", web(
			"    roles:",
			"      worker: {metrics: 9101, serviceMonitor: yes please}",
		), []string{`slipway.yaml:6: nodes.web.roles.worker.serviceMonitor: must be true or false, not a string`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkErrors(t, tt.file, tt.want) })
	}
}

// TestParseBaseInOwnRegistry: a base in slipway's registry is checked as a reference after its
// prefix.
func TestParseBaseInOwnRegistry(t *testing.T) {
	checkErrors(t, doc("group: demo", "nodes:", "  web:", "    image: {base: \"${K8S_REGISTRY}/Base:1\"}"),
		[]string{`slipway.yaml:4: nodes.web.image.base: "${K8S_REGISTRY}/Base:1" is not an image reference`})
	if _, err := spec.Parse("slipway.yaml", []byte(doc("group: demo", "nodes:", "  web:", "    image: {base: \"${K8S_REGISTRY}/base:1\"}")), root); err != nil {
		t.Errorf("a base in slipway's registry: %v", err)
	}
}
