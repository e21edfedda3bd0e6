package engine

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/status"
)

// TestFailureReportQuotesTheCluster: a failed pod's log and its container's message reach the
// report with every escape code quoted and each log line on a line of its own, so that they
// cannot erase what the terminal shows nor write a line of slipway's (issue 35, item 8).
func TestFailureReportQuotesTheCluster(t *testing.T) {
	f := newFakeCluster()
	f.PodLog = "starting\n\x1b[1A\x1b[2KNo changes.\rdone"
	f.PutDeployment(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "demo"},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "node", Image: imgCrash}}}}}})
	pod := f.Deps["web"].Pods[0]
	k := plan.Key{Kind: "Deployment", Namespace: "demo", Name: "web"}
	dep, rss, pods, evs := f.Deployment("demo", "web")
	// A container's termination message is whatever it wrote to /dev/termination-log.
	pods[0].Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: 1, Message: "failed\x1b[2K\nNo changes."}}
	res := status.Rollout(status.Input{Deployment: dep, ReplicaSets: rss, Pods: pods, Events: evs})
	f.Deps["web"].Pods[0] = pods[0]

	report := res.Message + New(Options{Kube: f}).env.FailureReport(context.Background(), f, k, res)
	if strings.ContainsAny(report, "\x1b\r") {
		t.Errorf("the report holds a raw escape code or carriage return:\n%q", report)
	}
	for _, want := range []string{
		"pod " + pod.Name + ": container node: exited with code 1: " + `failed\x1b[2K No changes.`,
		"\n    starting\n    " + `\x1b[1A\x1b[2KNo changes.\rdone`,
	} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q:\n%s", want, report)
		}
	}
}
