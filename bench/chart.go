package main

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// chartGroup is one scenario of the chart: the SDK's bar, the peer's bar,
// and an optional ceiling mark.
type chartGroup struct {
	label   string
	sdk     float64
	asynq   float64
	note    string // under the label, e.g. "asynq: per call"
	ceiling float64
	ceilLbl string
}

// niceStep returns a round tick step giving about n ticks up to max.
func niceStep(max float64, n int) float64 {
	raw := max / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if raw <= m*mag {
			return m * mag
		}
	}
	return 10 * mag
}

// shortNum prints 123456 as 123.5k.
func shortNum(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.1fk", v/1e3)
	case v >= 1e3:
		return fmt.Sprintf("%.2fk", v/1e3)
	default:
		return fmt.Sprintf("%.0f", v)
	}
}

// renderChart draws grouped bars, SDK against asynq, for the throughput
// scenarios: a hand-written SVG on a linear axis, every bar labelled.
func renderChart(rep *Report) string {
	row := func(key string) Row {
		for _, r := range rep.Rows {
			if r.Key == key {
				return r
			}
		}
		return Row{}
	}
	one, batch, drain, ep := row("enqueue_one"), row("enqueue_batch"), row("drain"), row("enqueue_process")
	groups := []chartGroup{
		{label: "enqueue, one per call", sdk: one.SDK, asynq: one.Asynq, ceiling: one.Ceiling, ceilLbl: "ceiling, -P 1"},
		{label: "enqueue, batched", sdk: batch.SDK, asynq: batch.Asynq, note: "asynq: no batch, per call", ceiling: batch.Ceiling, ceilLbl: "ceiling, -P 16"},
		{label: "drain a full queue", sdk: drain.SDK, asynq: drain.Asynq},
		{label: "enqueue + process", sdk: ep.SDK, asynq: ep.Asynq},
	}
	const (
		W, H             = 820, 474
		left, right      = 78, 20
		top, bottom      = 78, 106
		sdkColor         = "#2563eb"
		asynqColor       = "#d97706"
		ceilColor        = "#6b7280"
		font             = `font-family="Helvetica,Arial,sans-serif"`
		barW, barGap     = 62.0, 8.0
		plotW, plotH     = W - left - right, H - top - bottom
		groupW           = float64(plotW) / 4
		valueLabelOffset = 5
		halo             = `stroke="#ffffff" stroke-width="3" paint-order="stroke"`
	)
	maxV := 0.0
	for _, g := range groups {
		maxV = math.Max(maxV, math.Max(math.Max(g.sdk, g.asynq), g.ceiling))
	}
	if maxV <= 0 {
		maxV = 1
	}
	step := niceStep(maxV, 5)
	axisMax := math.Ceil(maxV*1.08/step) * step
	y := func(v float64) float64 { return float64(top) + float64(plotH)*(1-v/axisMax) }

	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...); b.WriteByte('\n') }
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="EchoMQ SDK vs asynq throughput">`, W, H, W, H)
	p(`<rect width="%d" height="%d" fill="#ffffff"/>`, W, H)
	p(`<text x="%d" y="28" %s font-size="18" font-weight="bold" fill="#111827">EchoMQ Go SDK vs asynq %s — jobs per second (higher is better)</text>`, left, font, html.EscapeString(rep.Meta.Asynq))
	m := rep.Meta
	runs := ""
	if m.Runs > 1 {
		runs = fmt.Sprintf(", median of %d", m.Runs)
	}
	p(`<text x="%d" y="48" %s font-size="12" fill="#4b5563">%s no-op jobs, %d producers, concurrency %d%s; Redis %s, %d cores; %s; %s</text>`,
		left, font, commas(int64(m.Jobs)), m.Producers, m.Concurrency, runs, html.EscapeString(m.Redis), m.Cores, html.EscapeString(m.Go), html.EscapeString(m.Date[:min(10, len(m.Date))]))
	// Legend.
	p(`<rect x="%d" y="58" width="12" height="12" fill="%s"/><text x="%d" y="68" %s font-size="12" fill="#111827">EchoMQ SDK</text>`, left, sdkColor, left+17, font)
	p(`<rect x="%d" y="58" width="12" height="12" fill="%s"/><text x="%d" y="68" %s font-size="12" fill="#111827">asynq</text>`, left+110, asynqColor, left+127, font)
	p(`<line x1="%d" y1="64" x2="%d" y2="64" stroke="%s" stroke-width="2" stroke-dasharray="5,3"/><text x="%d" y="68" %s font-size="12" fill="#111827">redis-benchmark EVALSHA ceiling (push.lua)</text>`, left+190, left+214, ceilColor, left+219, font)
	// Grid and axis.
	for v := 0.0; v <= axisMax+step/2; v += step {
		yy := y(v)
		p(`<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e5e7eb" stroke-width="1"/>`, left, yy, W-right, yy)
		p(`<text x="%d" y="%.1f" %s font-size="11" fill="#4b5563" text-anchor="end">%s</text>`, left-6, yy+4, font, shortNum(v))
	}
	p(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#9ca3af" stroke-width="1"/>`, left, top, left, top+plotH)
	p(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#9ca3af" stroke-width="1"/>`, left, top+plotH, W-right, top+plotH)
	for i, g := range groups {
		cx := float64(left) + groupW*(float64(i)+0.5)
		x0 := cx - barW - barGap/2
		x1 := cx + barGap/2
		for _, bar := range []struct {
			x     float64
			v     float64
			color string
		}{{x0, g.sdk, sdkColor}, {x1, g.asynq, asynqColor}} {
			yy := y(bar.v)
			p(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`, bar.x, yy, barW, float64(top+plotH)-yy, bar.color)
			// A value label that would sit on the ceiling line goes just
			// above it.
			ly := yy - valueLabelOffset
			if cy := y(g.ceiling); g.ceiling > 0 && ly > cy-4 && ly < cy+14 {
				ly = cy - 4
			}
			p(`<text x="%.1f" y="%.1f" %s %s font-size="12" fill="#111827" text-anchor="middle">%s</text>`, bar.x+barW/2, ly, font, halo, shortNum(bar.v))
		}
		if g.ceiling > 0 {
			yy := y(g.ceiling)
			p(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2" stroke-dasharray="5,3"/>`, x0-6, yy, x1+barW+6, yy, ceilColor)
		}
		base := top + plotH
		p(`<text x="%.1f" y="%d" %s font-size="13" fill="#111827" text-anchor="middle">%s</text>`, cx, base+20, font, html.EscapeString(g.label))
		r := "—"
		if g.asynq > 0 {
			r = fmtRatio(g.sdk / g.asynq)
		}
		p(`<text x="%.1f" y="%d" %s font-size="12" font-weight="bold" fill="%s" text-anchor="middle">SDK = %s asynq</text>`, cx, base+38, font, sdkColor, r)
		ly := base + 54
		if g.ceiling > 0 {
			p(`<text x="%.1f" y="%d" %s font-size="11" fill="#374151" text-anchor="middle">%s: %s</text>`, cx, ly, font, g.ceilLbl, shortNum(g.ceiling))
			p(`<text x="%.1f" y="%d" %s font-size="11" fill="#374151" text-anchor="middle">SDK = %s the ceiling</text>`, cx, ly+14, font, fmtRatio(g.sdk/g.ceiling))
			ly += 29
		}
		if g.note != "" {
			p(`<text x="%.1f" y="%d" %s font-size="11" fill="#4b5563" text-anchor="middle">%s</text>`, cx, ly, font, html.EscapeString(g.note))
		}
	}
	p(`</svg>`)
	return b.String()
}
