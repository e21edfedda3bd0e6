package e2e

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"slipway.dev/slipway/internal/devcluster/devtest"
)

// realFailGroup is one `init: none` node on the real node; {{CMD}} is its command and
// {{TIMEOUT}} its rolloutTimeout.
const realFailGroup = `group: {{GROUP}}
nodes:
  app:
    image:
      rootfs: nodes/app/rootfs
      command: {{CMD}}
    init: none
    readiness: {tcp: 8080}
    rolloutTimeout: {{TIMEOUT}}
    stopGracePeriod: 5s
    state: {size: 1Gi}
    firewall: {served: [8080]}
    {{REAL}}
`

// realServes8080 is the good release: busybox httpd on 8080, a shell that exits on SIGTERM.
const realServes8080 = `[/bin/sh, -c, 'trap "exit 0" TERM; httpd -f -p 8080 -h /tmp & wait']`

func realFailFile(cmd, timeout string) string {
	return strings.NewReplacer("{{CMD}}", cmd, "{{TIMEOUT}}", timeout).Replace(realFailGroup)
}

// TestRealRolloutFailures: a release that is never Ready on the real node is set back, the
// previous image runs Ready again, and the error names the kubelet's reason. The kubelet, not
// kwok, says why: a readiness probe that never passes (at the rollout limit), a crash loop, a
// container that exits with an error and an image whose content the registry does not have
// (all three early, well before the limit).
func TestRealRolloutFailures(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		cmd     string // the failing release's command
		timeout string
		breakIt func(t *testing.T, g *Group) // before the failing apply
		reason  *regexp.Regexp               // in apply's error
		within  time.Duration                // the failing apply ends within
	}{
		// 60 s: on a loaded machine a container took over 30 s to be created, and the
		// rollout then ended as a Timeout before any probe had run.
		{name: "never-ready", timeout: "60s", within: 150 * time.Second,
			cmd:    `[/bin/sh, -c, 'trap "exit 0" TERM; httpd -f -p 8081 -h /tmp & wait']`,
			reason: regexp.MustCompile(`NotReady: pod app-\S+: container node: did not become ready within 1m0s(.|\n)*Readiness probe failed: .*8080.*connection refused`)},
		// A program that exits 0 at once (a daemon that forks away) is restarted by the
		// kubelet, which backs off: CrashLoopBackOff.
		{name: "crashloop", timeout: "5m", within: 2 * time.Minute,
			cmd:    `[/bin/sh, -c, 'echo leaving at once >&2; exit 0']`,
			reason: regexp.MustCompile(`CrashLoopBackOff: pod app-\S+: container node: back-off restarting failed container(.|\n)*leaving at once`)},
		// One that fails is certain at its first exit, before the kubelet backs off: the
		// failure names its exit code and its last log line.
		{name: "exits", timeout: "5m", within: 2 * time.Minute,
			cmd:    `[/bin/sh, -c, 'echo crashing on purpose >&2; exit 3']`,
			reason: regexp.MustCompile(`ContainerExited: pod app-\S+: container node: exited with code 3(.|\n)*crashing on purpose`)},
		{name: "pull-error", timeout: "5m", within: 2 * time.Minute,
			cmd:     `[/bin/sh, -c, 'trap "exit 0" TERM; echo v2 > /tmp/v; httpd -f -p 8080 -h /tmp & wait']`,
			breakIt: realPushWithoutConfig,
			reason:  regexp.MustCompile(`ErrImagePull|ImagePullBackOff`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g, node := NewRealGroup(t, "real-"+tc.name, realFailFile(realServes8080, tc.timeout), "app")
			g.MustRun(0, "apply", "--yes")
			g.roRequireReady("app", 1)
			before := g.roDeployment("app")
			digest := g.roState().State.Nodes["app"].Image.Digest

			g.realWriteGroup(realFailFile(tc.cmd, tc.timeout))
			if tc.breakIt != nil {
				tc.breakIt(t, g)
			}
			r, took := g.roApplyFails()
			t.Logf("the failed apply took %s:\n%s", took, r.Stderr)
			if took > tc.within {
				t.Errorf("the failed apply took %s, want it within %s", took, tc.within)
			}
			if !tc.reason.MatchString(r.Stderr) {
				t.Errorf("apply's error does not match %s:\n%s", tc.reason, r)
			}
			if want := "rolled back to " + digest; !strings.Contains(r.Stderr, want) {
				t.Errorf("apply's error lacks %q:\n%s", want, r)
			}
			// The previous template runs again, Ready, for real on the real node.
			if diff := cmp.Diff(before.Spec.Template, g.roDeployment("app").Spec.Template); diff != "" {
				t.Errorf("deployment app after the rollback: template differs (-before +after):\n%s", diff)
			}
			// A real kubelet takes a moment to remove the failed pod after the rollback.
			devtest.WaitFor(t, time.Minute, "the failed pod gone", func() (bool, string) {
				pods := g.roPods("app")
				return len(pods) == 1, fmt.Sprintf("pods %v", roPodNames(pods))
			})
			g.roRequireReady("app", 1)
			pod := g.realPod("app", node)
			if got := pod.Spec.Containers[0].Image; !strings.HasSuffix(got, "@"+digest) {
				t.Errorf("pod %s runs %s, want the previous image %s", pod.Name, got, digest)
			}
			if st := pod.Status.ContainerStatuses; len(st) != 1 || !st[0].Ready || st[0].State.Running == nil {
				t.Errorf("pod %s after the rollback: container status %+v, want running and ready", pod.Name, st)
			}
		})
	}
}

// realPushWithoutConfig pushes the next release's image (slipway images push) and deletes its
// config blob from the registry: slipway's plan finds the image's tag and pushes nothing,
// while the kubelet's pull of the digest fails on the blob the registry no longer has.
func realPushWithoutConfig(t *testing.T, g *Group) {
	t.Helper()
	g.MustRun(0, "images", "push")
	tags := g.RepoTags("app")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	deleted := 0
	for _, tag := range tags {
		ref, err := name.ParseReference(g.Env.Registry+"/"+g.Name+"/app:"+tag, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		img, err := remote.Image(ref, remote.WithContext(ctx))
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(strings.Join(cf.Config.Entrypoint, " "), "echo v2") {
			continue // the running release's image
		}
		cfg, err := img.ConfigName()
		if err != nil {
			t.Fatal(err)
		}
		url := fmt.Sprintf("http://%s/v2/%s/app/blobs/%s", g.Env.Registry, g.Name, cfg)
		req, _ := http.NewRequestWithContext(ctx, http.MethodDelete, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("DELETE %s: %s", url, resp.Status)
		}
		deleted++
	}
	if deleted != 1 {
		t.Fatalf("the next release's image is not among the tags %v", tags)
	}
}
