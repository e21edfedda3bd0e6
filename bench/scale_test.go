package main

import (
	"encoding/xml"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseSizes(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []int
		wantErr bool
	}{
		{in: "200,1000,2000", want: []int{200, 1000, 2000}},
		{in: "200, 1000", want: []int{200, 1000}},
		{in: "50", want: []int{50}},
		{in: "200,,1000", wantErr: true},
		{in: "0", wantErr: true},
		{in: "a", wantErr: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseSizes(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("parseSizes(%q) error %v, want error %v", tc.in, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("parseSizes(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

// The plot is well-formed XML with one point per measured value: three steps' wall times, the
// floor and three peak RSS figures per size; a failed step has no point.
func TestScaleSVG(t *testing.T) {
	step := func(wall, rss float64, failed bool) Step {
		s := Step{WallSeconds: wall, PeakRSSMB: rss}
		if failed {
			s.Error = "exit status 1"
		}
		return s
	}
	rows := []ScaleRow{
		{Nodes: 200, FloorSeconds: 28, Steps: []Step{step(31, 90, false), step(0.4, 60, false), step(0.44, 61, false), step(22, 40, false)}},
		{Nodes: 1000, FloorSeconds: 240, Steps: []Step{step(254, 206, false), step(2.8, 198, true), step(2.6, 207, false), step(60, 50, false)}},
	}
	svg := scaleSVG(rows)
	dec := xml.NewDecoder(strings.NewReader(svg))
	circles, polylines := 0, 0
	for {
		tok, err := dec.Token()
		if err != nil {
			if err != io.EOF {
				t.Fatalf("plot is not well-formed: %v\n%s", err, svg)
			}
			break
		}
		if se, ok := tok.(xml.StartElement); ok {
			switch se.Name.Local {
			case "circle":
				circles++
			case "polyline":
				polylines++
			}
		}
	}
	// 7 values per size, less the failed no-op apply's wall and RSS at 1000.
	if want := 2*7 - 2; circles != want {
		t.Errorf("%d points, want %d", circles, want)
	}
	// A line needs two points: all seven series but the no-op apply's wall and RSS.
	if want := 7 - 2; polylines != want {
		t.Errorf("%d lines, want %d", polylines, want)
	}
}

// The median of the repeated steps is the middle wall time, the later of two middle ones.
func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		name  string
		walls []float64
		want  float64
	}{
		{"one", []float64{0.7}, 0.7},
		{"three in order", []float64{0.5, 0.6, 0.7}, 0.6},
		{"three unordered", []float64{1.04, 0.61, 0.58}, 0.61},
		{"two", []float64{0.9, 0.5}, 0.9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var steps []Step
			for _, w := range tc.walls {
				steps = append(steps, Step{Step: "plan", WallSeconds: w})
			}
			if got := median(steps).WallSeconds; got != tc.want {
				t.Errorf("median of %v = %v, want %v", tc.walls, got, tc.want)
			}
			if diff := cmp.Diff(tc.walls, walls(steps)); diff != "" {
				t.Errorf("walls changed order (-want +got):\n%s", diff)
			}
		})
	}
}
