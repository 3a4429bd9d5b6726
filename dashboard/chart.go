package dashboard

import (
	"fmt"
	"html"
	"html/template"
	"strings"
	"time"
)

// series is one line of a chart.
type series struct {
	Name  string
	Color string
	// Values, one per time of the chart; a negative value is a gap.
	Values []float64
}

// chartColors are the colours of a chart's lines, in order.
var chartColors = []string{"#2563eb", "#16a34a", "#d97706", "#dc2626", "#7c3aed"}

// svgChart draws series over times as an SVG line chart, width by height
// pixels, with the largest value and the time span labelled. Everything
// written is a number or escaped text.
func svgChart(title string, times []time.Time, ss []series, width, height int) template.HTML {
	left, right, top, bottom := 48, 8, 20, 22
	if title == "" {
		top = 6
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" role="img" aria-label="%s" viewBox="0 0 %d %d" width="%d" height="%d" xmlns="http://www.w3.org/2000/svg">`,
		html.EscapeString(title), width, height, width, height)
	if title != "" {
		fmt.Fprintf(&b, `<text x="%d" y="14" class="ct">%s</text>`, left, html.EscapeString(title))
	}
	pw, ph := float64(width-left-right), float64(height-top-bottom)
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.0f" height="%.0f" class="cf"/>`, left, top, pw, ph)
	if len(times) < 2 {
		fmt.Fprintf(&b, `<text x="%d" y="%d" class="cn">not enough samples yet</text></svg>`, left+8, top+int(ph/2))
		return template.HTML(b.String())
	}
	peak := 0.0
	for _, s := range ss {
		for _, v := range s.Values {
			peak = max(peak, v)
		}
	}
	if peak == 0 {
		peak = 1
	}
	span := times[len(times)-1].Sub(times[0]).Seconds()
	if span <= 0 {
		span = 1
	}
	x := func(i int) float64 { return float64(left) + pw*times[i].Sub(times[0]).Seconds()/span }
	legend := 96
	if width < 400 {
		legend = 64
	}
	y := func(v float64) float64 { return float64(top) + ph - ph*v/peak }
	for _, g := range []float64{0, 0.5, 1} {
		fmt.Fprintf(&b, `<line x1="%d" x2="%.1f" y1="%.1f" y2="%.1f" class="cg"/>`, left, float64(left)+pw, y(peak*g), y(peak*g))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" class="cl" text-anchor="end">%s</text>`, left-4, y(peak*g)+4, shortNumber(peak*g))
	}
	for i, s := range ss {
		color := s.Color
		if color == "" {
			color = chartColors[i%len(chartColors)]
		}
		var pts []string
		flush := func() {
			if len(pts) > 0 {
				fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.6" points="%s"/>`, color, strings.Join(pts, " "))
			}
			pts = pts[:0]
		}
		for j, v := range s.Values {
			if v < 0 || j >= len(times) {
				flush()
				continue
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(j), y(v)))
		}
		flush()
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="8" height="8" fill="%s"/><text x="%d" y="%d" class="cl">%s</text>`,
			left+8+i*legend, height-10, color, left+20+i*legend, height-2, html.EscapeString(s.Name))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" class="cl" text-anchor="end">last %s</text>`, width-right, height-2, html.EscapeString(time.Duration(span*float64(time.Second)).Round(time.Second).String()))
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// shortNumber prints n with a k or M suffix past a thousand.
func shortNumber(n float64) string {
	switch {
	case n >= 1e6:
		return fmt.Sprintf("%.1fM", n/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1fk", n/1e3)
	case n == float64(int64(n)):
		return fmt.Sprintf("%d", int64(n))
	}
	return fmt.Sprintf("%.1f", n)
}
