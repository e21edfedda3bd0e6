package e2e

import (
	"strings"
	"testing"
)

const helloGroup = `group: {{GROUP}}
defaults:
  state: {size: 1Gi}
nodes:
  web:
    image: {rootfs: nodes/web/rootfs}
    firewall:
      served: [22, 80, 443]
      published: [80, 443]
      admin: [22]
      adminSources: [192.0.2.0/24]
    roles:
      worker: {replicas: 2, ports: [8080], metrics: 9101}
  db:
    image: {rootfs: nodes/db/rootfs}
    init: none
    readiness: {tcp: 5432}
    firewall: {served: [5432]}
`

func TestApplyThenNoChanges(t *testing.T) {
	g := NewGroup(t, "noop", helloGroup, "web", "db")
	g.MustRun(0, "apply", "--yes")
	r := g.MustRun(0, "plan", "--detailed-exitcode")
	if !strings.Contains(r.Stdout, "No changes.") {
		t.Fatalf("plan after apply: want No changes., got %s", r)
	}
	c := g.CountRequests()
	g.MustRun(0, "apply", "--yes")
	if n, paths := c.Writes(); n != 0 {
		t.Fatalf("no-op apply made %d write requests: %v", n, paths)
	}
}
