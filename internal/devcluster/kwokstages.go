package devcluster

import (
	"fmt"
	"strings"
)

// outcomeStages simulate the three failures of SPEC §10; a pull error backs off as kubelet's
// does.
var outcomeStages = []outcomeStage{
	{name: "slipway-never-ready", outcome: OutcomeNeverReady, match: []string{phaseIn("Pending")},
		phase: "Running", containersNotReady: true,
		container: []string{"started: true", "restartCount: 0", "state:", "  running:", "    startedAt: {{ $now | Quote }}"}},
	{name: "slipway-crashloop", outcome: OutcomeCrashLoop, match: []string{phaseIn("Pending, Running")}, delayMs: 1000,
		phase: "Running", containersNotReady: true,
		vars: []string{"{{ $restarts := 0 }}", "{{ range .status.containerStatuses }}{{ $restarts = .restartCount }}{{ end }}"},
		container: []string{"started: false", "restartCount: {{ add1 (int64 $restarts) }}",
			"lastState:", "  terminated: {exitCode: 1, reason: Error, startedAt: {{ $now | Quote }}, finishedAt: {{ $now | Quote }}}",
			"state:", "  waiting:", "    reason: CrashLoopBackOff",
			`    message: {{ printf "back-off 10s restarting failed container=%s" .name | Quote }}`}},
	{name: "slipway-pull-error", outcome: OutcomePullError,
		match: []string{phaseIn("Pending"), "{key: '.status.containerStatuses', operator: DoesNotExist}"},
		phase: "Pending",
		container: []string{"restartCount: 0", "state:", "  waiting:", "    reason: ErrImagePull",
			`    message: {{ printf "failed to pull and unpack image %q: not found" .image | Quote }}`}},
	{name: "slipway-pull-backoff", outcome: OutcomePullError,
		match:   []string{"{key: '.status.containerStatuses.[0].state.waiting.reason', operator: In, values: [ErrImagePull]}"},
		delayMs: 2000,
		container: []string{"restartCount: 0", "state:", "  waiting:", "    reason: ImagePullBackOff",
			`    message: {{ printf "Back-off pulling image %q" .image | Quote }}`}},
}

// outcomeStage is a kwok Stage of a simulated outcome: a pod whose SLIPWAY_DEV_POD is outcome,
// not being deleted and matching match, gets after delayMs the status its template writes.
type outcomeStage struct {
	name, outcome string
	match         []string // further matchExpressions, in YAML flow form
	delayMs       int
	// phase is the pod's phase, written with its start time and the conditions Initialized
	// and Ready False (and ContainersReady False with containersNotReady); "": the stage
	// writes the container statuses only.
	phase              string
	containersNotReady bool
	vars               []string // template lines that set variables, after $now
	container          []string // each container's status after image, name and ready: false
}

func phaseIn(phases string) string {
	return "{key: '.status.phase', operator: In, values: [" + phases + "]}"
}

// yaml is the stage as a YAML document.
func (s outcomeStage) yaml() string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: kwok.x-k8s.io/v1alpha1\nkind: Stage\nmetadata:\n  name: %s\nspec:\n"+
		"  resourceRef: {apiGroup: v1, kind: Pod}\n  selector:\n    matchExpressions:\n", s.name)
	match := append([]string{"{key: '.metadata.deletionTimestamp', operator: DoesNotExist}",
		"{key: '" + envSelector + "', operator: In, values: [" + s.outcome + "]}"}, s.match...)
	for _, m := range match {
		b.WriteString("    - " + m + "\n")
	}
	if s.delayMs > 0 {
		fmt.Fprintf(&b, "  delay:\n    durationMilliseconds: %d\n", s.delayMs)
	}
	b.WriteString("  next:\n    statusTemplate: |\n")
	for _, l := range s.statusTemplate() {
		b.WriteString("      " + l + "\n")
	}
	return b.String()
}

// statusTemplate is the stage's kwok status template, a line each.
func (s outcomeStage) statusTemplate() []string {
	const cond = `- {lastTransitionTime: {{ $now | Quote }}, status: "%s", type: %s%s}`
	var t []string
	if s.phase != "" {
		t = append(append(t, "{{ $now := Now }}"), s.vars...)
		t = append(t, "conditions:", fmt.Sprintf(cond, "True", "Initialized", ""),
			fmt.Sprintf(cond, "False", "Ready", `, reason: ContainersNotReady, message: "containers with unready status"`))
		if s.containersNotReady {
			t = append(t, fmt.Sprintf(cond, "False", "ContainersReady", ", reason: ContainersNotReady"))
		}
	}
	t = append(t, "containerStatuses:", "{{ range .spec.containers }}",
		"- image: {{ .image | Quote }}", "  name: {{ .name | Quote }}", "  ready: false")
	for _, l := range s.container {
		t = append(t, "  "+l)
	}
	t = append(t, "{{ end }}")
	if s.phase != "" {
		t = append(t, "phase: "+s.phase, "startTime: {{ $now | Quote }}")
	}
	return t
}
