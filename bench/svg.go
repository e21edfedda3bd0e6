package main

// The scale plot, hand-written SVG: three panels against N (first apply and its floor; no-op
// apply and plan; peak RSS of each), linear axes from zero so that linear growth is a straight
// line through the origin.

import (
	"fmt"
	"html"
	"math"
	"strings"
)

type series struct {
	name, color string
	x, y        []float64
}

func scaleSVG(rows []ScaleRow) string {
	pick := func(name, color string, f func(ScaleRow) (float64, bool)) series {
		s := series{name: name, color: color}
		for _, r := range rows {
			if v, ok := f(r); ok {
				s.x, s.y = append(s.x, float64(r.Nodes)), append(s.y, v)
			}
		}
		return s
	}
	step := func(i int, rss bool) func(ScaleRow) (float64, bool) {
		return func(r ScaleRow) (float64, bool) {
			if i >= len(r.Steps) || r.Steps[i].Error != "" {
				return 0, false
			}
			if rss {
				return r.Steps[i].PeakRSSMB, true
			}
			return r.Steps[i].WallSeconds, true
		}
	}
	floor := func(r ScaleRow) (float64, bool) { return r.FloorSeconds, r.FloorSeconds > 0 }
	const w, h = 360, 300
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">`+"\n", 3*w, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	panel(&b, 0, w, h, "first apply (until all Ready)", "seconds", []series{
		pick("slipway first apply", "#1f77b4", step(0, false)),
		pick("cluster floor", "#7f7f7f", floor),
	})
	panel(&b, w, w, h, "no changes", "seconds", []series{
		pick("no-op apply", "#d62728", step(1, false)),
		pick("plan", "#2ca02c", step(2, false)),
	})
	panel(&b, 2*w, w, h, "peak RSS of the slipway process", "MB", []series{
		pick("first apply", "#1f77b4", step(0, true)),
		pick("no-op apply", "#d62728", step(1, true)),
		pick("plan", "#2ca02c", step(2, true)),
	})
	b.WriteString("</svg>\n")
	return b.String()
}

// panel draws one chart at horizontal offset x0.
func panel(b *strings.Builder, x0, w, h int, title, unit string, ss []series) {
	const left, right, top, bottom = 50, 15, 30, 80
	pw, ph := float64(w-left-right), float64(h-top-bottom)
	var xmax, ymax float64
	for _, s := range ss {
		for i := range s.x {
			xmax, ymax = math.Max(xmax, s.x[i]), math.Max(ymax, s.y[i])
		}
	}
	xmax, ymax = niceCeil(xmax), niceCeil(ymax*1.05)
	px := func(x float64) float64 { return float64(x0+left) + x/xmax*pw }
	py := func(y float64) float64 { return float64(top) + ph - y/ymax*ph }
	fmt.Fprintf(b, `<text x="%d" y="18" font-weight="bold">%s</text>`+"\n", x0+left, html.EscapeString(title))
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%.0f" height="%.0f" fill="none" stroke="#999"/>`+"\n", x0+left, top, pw, ph)
	for i := 0; i <= 4; i++ {
		xv, yv := xmax*float64(i)/4, ymax*float64(i)/4
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", px(xv), top+int(ph)+14, num(xv))
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", x0+left-4, py(yv)+4, num(yv))
		fmt.Fprintf(b, `<line x1="%d" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#eee"/>`+"\n", x0+left, px(xmax), py(yv), py(yv))
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">nodes (N)</text>`+"\n", px(xmax/2), top+int(ph)+28)
	fmt.Fprintf(b, `<text x="%d" y="%d" transform="rotate(-90 %d %d)" text-anchor="middle">%s</text>`+"\n",
		x0+12, top+int(ph)/2, x0+12, top+int(ph)/2, html.EscapeString(unit))
	for i, s := range ss {
		var pts []string
		for j := range s.x {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(s.x[j]), py(s.y[j])))
			fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"><title>%s: N=%s, %s %s</title></circle>`+"\n",
				px(s.x[j]), py(s.y[j]), s.color, html.EscapeString(s.name), num(s.x[j]), num(s.y[j]), unit)
		}
		if len(pts) > 1 {
			fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", strings.Join(pts, " "), s.color)
		}
		ly := top + int(ph) + 44 + 13*i
		fmt.Fprintf(b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="2"/>`+"\n", x0+left, x0+left+18, ly-4, ly-4, s.color)
		fmt.Fprintf(b, `<text x="%d" y="%d">%s</text>`+"\n", x0+left+24, ly, html.EscapeString(s.name))
	}
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten (1 for v <= 0).
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func num(v float64) string {
	if v == math.Trunc(v) || math.Abs(v) >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.3g", v)
}
