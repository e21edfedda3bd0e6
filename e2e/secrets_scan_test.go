package e2e

// The secrets lane's check that no value leaks (issue 43's "Done when"): one scan of
// everything slipway and the cluster keep or print about a group, for sentinel values.

import (
	"context"
	"os/exec"
	"strings"
	"time"
)

// scanForValues fails the test when any of values (secrets, the server's token) appears in
// what the group left anywhere: every output of the binary's runs (Group.Run records them),
// plus those of status, status -o json and state show -o json run now; every file under the
// group directory (the state, saved plans, renders, the group file); the namespace's events
// and objects as YAML (pod statuses with their termination messages among them); and the log
// of every container of every pod, the one before its last restart too. It says where, never
// the value.
func (g *Group) scanForValues(values map[string]string) {
	g.t.Helper()
	g.Run("status")
	g.Run("status", "-o", "json")
	g.Run("state", "show", "-o", "json")
	sources := map[string]string{"the binary's output": strings.Join(g.outputs, "\n")}
	sources["the group directory (state, plan files, renders)"] = g.readTree(".")
	sources["events"] = g.kubectlOut("get", "events", "-o", "yaml")
	sources["objects"] = g.kubectlOut("get", "all,configmaps,secrets,serviceaccounts,persistentvolumeclaims", "-o", "yaml")
	var logs strings.Builder
	pods := strings.Fields(g.kubectlOut("get", "pods", "-o", "jsonpath={range .items[*]}{.metadata.name}{' '}{end}"))
	for _, pod := range pods {
		containers := strings.Fields(g.kubectlOut("get", "pod", pod, "-o", "jsonpath={.spec.initContainers[*].name} {.spec.containers[*].name}"))
		for _, c := range containers {
			logs.WriteString(g.kubectlOut("logs", pod, "-c", c))
			logs.WriteString(g.kubectlOut("logs", pod, "-c", c, "--previous"))
		}
	}
	sources["container logs"] = logs.String()
	for where, text := range sources {
		for name, v := range values {
			if v != "" && strings.Contains(text, v) {
				g.t.Errorf("the value of %s appears in %s", name, where)
			}
		}
	}
	g.t.Logf("scanned for %d values: %d runs' output, %d bytes of files, %d pods' logs (%d bytes), events and objects",
		len(values), len(g.outputs)/2, len(sources["the group directory (state, plan files, renders)"]), len(pods), logs.Len())
}

// kubectlOut is kubectl's stdout in the group's namespace; "" when it fails (a container with
// no previous run has no --previous log).
func (g *Group) kubectlOut(args ...string) string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, _ := exec.CommandContext(ctx, g.Env.Kubectl(), append([]string{"--kubeconfig", g.Env.Kubeconfig, "-n", g.Name}, args...)...).Output()
	return string(out)
}
