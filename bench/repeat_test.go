package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The issue 17 target is judged on the median of the repeats' ratios; a repeat where either
// side failed counts for nothing, and with none measured the target says so.
func TestPairsTarget(t *testing.T) {
	pair := func(ratio float64) Pair { return Pair{Ratio: ratio} }
	for _, tc := range []struct {
		name  string
		pairs []Pair
		want  Target
	}{
		{"one repeat met", []Pair{pair(0.80)},
			Target{Goal: "first apply <= 1.1 x kubectl's floor (issue 17)", Value: "0.80 x", Met: true}},
		{"one repeat missed", []Pair{pair(1.14)},
			Target{Goal: "first apply <= 1.1 x kubectl's floor (issue 17)", Value: "1.14 x"}},
		{"median of three", []Pair{pair(1.30), pair(0.90), pair(1.05)},
			Target{Goal: "first apply <= 1.1 x kubectl's floor (issue 17; median of 3 alternated repeats)", Value: "1.05 x", Met: true}},
		{"a failed repeat is left out", []Pair{pair(1.30), pair(0), pair(1.20)},
			Target{Goal: "first apply <= 1.1 x kubectl's floor (issue 17; median of 3 alternated repeats)", Value: "1.30 x"}},
		{"none measured", []Pair{pair(0)},
			Target{Goal: "first apply <= 1.1 x kubectl's floor (issue 17)", Value: "not measured"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &bench{res: Result{Pairs: tc.pairs}}
			b.pairsTarget()
			if diff := cmp.Diff([]Target{tc.want}, b.res.Targets); diff != "" {
				t.Errorf("targets (-want +got):\n%s", diff)
			}
		})
	}
}

// The repeats' table names who went first and leaves a failed side unmeasured, not zero.
func TestPrintPairs(t *testing.T) {
	b := &bench{res: Result{Pairs: []Pair{
		{Repeat: 0, SlipwayFirst: true, FirstApply: 22.47, SlipwayFloor: 21, KubectlFloor: 28, Ratio: 22.47 / 28},
		{Repeat: 1, FirstApply: 30.66, SlipwayFloor: 30},
	}}}
	var out strings.Builder
	b.printPairs(&out)
	want := `
| repeat | first | slipway first apply s | floor of slipway's s | floor of kubectl's s | first apply / kubectl's floor |
|---:|---|---:|---:|---:|---:|
| 0 | slipway | 22.47 | 21 | 28 | 0.802 |
| 1 | kubectl | 30.66 | 30 | 0 | not measured |
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
}
