package e2e

import (
	"os/exec"
	"regexp"
	"testing"

	"slipway.dev/slipway/internal/devcluster/devtest"
)

// TestStateOnDevCluster runs internal/state's tests of its Kubernetes backend on the dev
// cluster: the conformance suite, the takeover of a lease, a killed holder, a 1,000-node
// state, and a Secret of the state's name that someone else made. They live beside the
// backend's insides (internal/state/kubernetes_cluster_test.go and kubernetes_foreign_test.go,
// built with the devenv tag); here they run, and each of them must pass.
func TestStateOnDevCluster(t *testing.T) {
	devtest.Env(t) // up before the child's tests look for it, with the same SLIPWAY_DEV_DIR
	out, err := exec.Command("go", "test", "-count=1", "-tags", "devenv", "-run", "Cluster$", "-v", "../internal/state").CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("go test -tags devenv ./internal/state: %v", err)
	}
	want := []string{"TestKubernetesBackendCluster", "TestKubernetesTakeoverCluster", "TestKubernetesKilledHolderCluster", "TestKubernetesSize1000NodesCluster", "TestKubernetesForeignSecretCluster"}
	for _, name := range want {
		if !regexp.MustCompile(`(?m)^--- PASS: ` + name + ` `).Match(out) {
			t.Errorf("%s did not pass", name)
		}
	}
}
