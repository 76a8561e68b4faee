package report

import (
	"bufio"
	"fmt"
	"html/template"
	"io"
)

// WriteHTML writes the report as one self-contained HTML page: inline CSS
// and SVG, no scripts, nothing fetched.
func (r *Report) WriteHTML(w io.Writer) error {
	bw := bufio.NewWriter(w)
	if err := pageTemplate.Execute(bw, r.page()); err != nil {
		return fmt.Errorf("render report: %w", err)
	}
	return bw.Flush()
}

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{
	"f": func(v float64) string { return fmt.Sprintf("%.1f", v) },
}).Parse(pageHTML))

const pageHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>kmaint rollout report</title>
<style>
body { font: 14px/1.4 "DejaVu Sans", "Helvetica Neue", Arial, sans-serif; color: #1f2937; margin: 24px; background: #fff; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 28px 0 8px; }
.sub { color: #6b7280; margin-bottom: 16px; }
.cards { display: flex; gap: 12px; flex-wrap: wrap; margin-bottom: 16px; }
.card { border: 1px solid #e5e7eb; border-radius: 8px; padding: 10px 16px; min-width: 110px; }
.card .v { font-size: 24px; font-weight: bold; }
.card .l { color: #6b7280; font-size: 12px; }
.card.ok .v { color: #15803d; } .card.bad .v { color: #b91c1c; }
.tables { display: flex; gap: 32px; flex-wrap: wrap; align-items: flex-start; }
table { border-collapse: collapse; font-size: 13px; }
th, td { border-bottom: 1px solid #e5e7eb; padding: 4px 10px; text-align: left; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
th { background: #f9fafb; }
.legend { display: flex; gap: 16px; flex-wrap: wrap; font-size: 13px; margin: 6px 0 8px; }
.legend span.sw { display: inline-block; width: 14px; height: 10px; margin-right: 5px; vertical-align: middle; border-radius: 2px; }
svg text { font-family: "DejaVu Sans", Arial, sans-serif; }
.axis text { font-size: 11px; fill: #6b7280; }
.grid { stroke: #eef0f3; }
.group rect.head { fill: #f3f4f6; }
.group text.name { font-size: 13px; font-weight: bold; fill: #111827; }
.group text.info { font-size: 11px; fill: #6b7280; }
.row text { font-size: 11px; fill: #374151; }
.row line { stroke: #f3f4f6; }
.k-daemon, .sw.k-daemon { fill: #cbd5e1; background: #cbd5e1; }
.k-gate, .sw.k-gate { fill: #fcd34d; background: #fcd34d; }
.k-draining, .sw.k-draining { fill: #f97316; background: #f97316; }
.k-rebooting, .sw.k-rebooting { fill: #3b82f6; background: #3b82f6; }
.k-settling, .sw.k-settling { fill: #14b8a6; background: #14b8a6; }
.k-before-drain, .sw.k-before-drain { fill: #c084fc; background: #c084fc; }
.k-before-reboot, .sw.k-before-reboot { fill: #9333ea; background: #9333ea; }
.k-after-reboot, .sw.k-after-reboot { fill: #6b21a8; background: #6b21a8; }
.sw.check { background: #d97706; }
path.check { fill: #d97706; stroke: #fff; stroke-width: 1; }
text.check { fill: #b45309; font-size: 11px; paint-order: stroke; stroke: #fff; stroke-width: 3px; stroke-linejoin: round; }
.sw.back { background: #16a34a; border-radius: 50% !important; width: 10px !important; }
.sw.fail { background: #dc2626; }
.sw.open { background: repeating-linear-gradient(45deg, #9ca3af, #9ca3af 3px, #fff 3px, #fff 6px); }
rect.bar.open { fill-opacity: 0.55; stroke: #6b7280; stroke-dasharray: 2 2; stroke-width: 1; }
rect.bar.failed { stroke: #dc2626; stroke-width: 1.5; }
circle.back { fill: #16a34a; stroke: #fff; stroke-width: 1; }
path.fail { stroke: #dc2626; stroke-width: 2.2; }
text.fail { fill: #b91c1c; font-size: 11px; paint-order: stroke; stroke: #fff; stroke-width: 3px; stroke-linejoin: round; }
line.now { stroke: #7c3aed; stroke-dasharray: 4 3; }
text.now { fill: #7c3aed; font-size: 11px; }
.chart path.area { fill: #93c5fd; stroke: #2563eb; stroke-width: 1.5; }
.chart rect.over { fill: #dc2626; fill-opacity: 0.8; }
.chart line.budget { stroke: #b91c1c; stroke-dasharray: 6 4; stroke-width: 1.5; }
.chart text.budget { fill: #b91c1c; font-size: 11px; }
.chart rect.hover { fill: transparent; }
.chart rect.hover:hover { fill: #1f2937; fill-opacity: 0.06; }
.chart text.name { font-size: 12px; font-weight: bold; }
.chart text.info { font-size: 11px; fill: #6b7280; }
.note { color: #6b7280; font-size: 12px; max-width: 1100px; }
</style>
</head>
<body>
<h1>kmaint rollout report</h1>
<div class="sub">{{.From}} → {{.To}} UTC ({{.Length}}) · generated {{.Generated}}</div>
<div class="cards">{{range .Cards}}<div class="card {{.Class}}"><div class="v">{{.Value}}</div><div class="l">{{.Label}}</div></div>{{end}}</div>
<div class="tables">
<table id="outcomes"><tr><th>pool</th><th>source</th><th>succeeded</th><th>failed</th><th>open</th></tr>
{{range .Counts}}<tr>{{if .First}}<td rowspan="{{.PoolRows}}">{{.Pool}}</td>{{end}}<td>{{.Source}}</td><td class="n">{{.Succeeded}}</td><td class="n">{{.Failed}}</td><td class="n">{{.Open}}</td></tr>
{{else}}<tr><td colspan="5">no maintenances</td></tr>{{end}}</table>
<table id="phases"><tr><th>phase (finished maintenances)</th><th>n</th><th>p50</th><th>p90</th><th>max</th></tr>
{{range .Phases}}<tr><td>{{.Name}}</td><td class="n">{{.N}}</td><td class="n">{{.P50}}</td><td class="n">{{.P90}}</td><td class="n">{{.Max}}</td></tr>
{{end}}</table>
</div>

{{if .Timeline.Compact}}{{template "charts" .}}{{end}}
<h2>Timeline</h2>
<div class="legend">{{range .Legend}}<span><span class="sw {{.Class}}"></span>{{.Label}}</span>{{end}}</div>
{{with .Timeline}}<svg id="timeline" xmlns="http://www.w3.org/2000/svg" width="{{.Width}}" height="{{.Height}}" viewBox="0 0 {{.Width}} {{.Height}}">
<g class="axis">{{range .Ticks}}<line class="grid" x1="{{f .X}}" x2="{{f .X}}" y1="20" y2="{{$.Timeline.Height}}"/><text x="{{f .X}}" y="14" text-anchor="middle">{{.Label}}</text>{{end}}</g>
{{range .Groups}}<g class="group"><rect class="head" x="0" y="{{f .Y}}" width="{{$.Timeline.Width}}" height="24" fill-opacity="0.8"/><text class="name" x="6" y="{{f .TextY}}">{{.Name}}</text><text class="info" x="200" y="{{f .TextY}}">{{.Info}}</text>
{{range .Rows}}<g class="row" data-node="{{.Title}}"><title>{{.Title}}</title>{{if not $.Timeline.Compact}}<line x1="200" x2="{{$.Timeline.Width}}" y1="{{f .LineY}}" y2="{{f .LineY}}"/><text x="12" y="{{f .TextY}}">{{.Label}}</text>{{end}}
{{range .Maintenances}}<g class="nm"><title>{{.Title}}</title>{{range .Bars}}<rect class="{{.Class}}" x="{{f .X}}" y="{{f .Y}}" width="{{f .W}}" height="{{f .H}}" rx="1.5"/>{{end}}
{{with .Check}}<path class="check" d="{{.Cross}}"/>{{if .Text}}<text class="check" x="{{f .X}}" y="{{f .Y}}" dx="{{if .Left}}-8{{else}}8{{end}}" dy="4"{{if .Left}} text-anchor="end"{{end}}>{{.Text}}</text>{{end}}{{end}}{{with .Back}}<circle class="back" cx="{{f .X}}" cy="{{f .Y}}" r="{{f .R}}"/>{{end}}{{with .Fail}}<path class="fail" d="{{.Cross}}"/>{{if .Text}}<text class="fail" x="{{f .X}}" y="{{f .Y}}" dx="{{if .Left}}-8{{else}}8{{end}}" dy="4"{{if .Left}} text-anchor="end"{{end}}>{{.Text}}</text>{{end}}{{end}}</g>
{{end}}</g>
{{end}}</g>
{{end}}{{if .ShowNow}}<line class="now" x1="{{f .NowX}}" x2="{{f .NowX}}" y1="18" y2="{{.Height}}"/><text class="now" x="{{f .NowX}}" y="{{.Height}}" dx="-3" dy="-2" text-anchor="end">now</text>{{end}}
</svg>{{end}}

{{if not .Timeline.Compact}}{{template "charts" .}}{{end}}
{{if .Failures}}<h2>Failures</h2>
<table id="failures"><tr><th>failed at (UTC)</th><th>node</th><th>NodeMaintenance</th><th>source</th><th>reason</th><th>message</th></tr>
{{range .Failures}}<tr><td>{{.At}}</td><td>{{.Node}}</td><td>{{.Name}}</td><td>{{.Source}}</td><td>{{.Reason}}</td><td>{{.Message}}</td></tr>
{{end}}</table>{{end}}
{{if .CheckFailures}}<h2>Failed health checks</h2>
<p class="note">Nodes a health check of their pool found bad after their reboot. Each kept its slot and halted its pool; HaltResumed means a person resumed the pool (kubectl kmaint resume) and the node gave its slot up as it was.</p>
<table id="checkfailures"><tr><th>failed at (UTC)</th><th>node</th><th>NodeMaintenance</th><th>phase now</th><th>reason</th><th>message</th></tr>
{{range .CheckFailures}}<tr><td>{{.At}}</td><td>{{.Node}}</td><td>{{.Name}}</td><td>{{.Phase}}</td><td>{{.Reason}}</td><td>{{.Message}}</td></tr>
{{end}}</table>{{end}}
</body>
</html>
{{define "charts"}}<h2>Unavailable nodes against the budget</h2>
<p class="note">Nodes admitted, draining, rebooting or settling, per pool, as the NodeMaintenances' phase times tell (nodes down or cordoned for other reasons are not in the history); the dashed line is the pool's maxUnavailable resolved for its size today. Phase times are when the operator saw each phase, so an edge may lag the node by a reconcile.</p>
{{range $c := .Charts}}<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{{.Width}}" height="{{.Height}}" viewBox="0 0 {{.Width}} {{.Height}}">
<text class="name" x="6" y="{{f .PlotTop}}" dy="8">{{.Name}}</text><text class="info" x="6" y="{{f .PlotTop}}" dy="24">{{.Info}}</text>
<g class="axis">{{range .Ticks}}<line class="grid" x1="{{f .X}}" x2="{{f .X}}" y1="{{f $c.PlotTop}}" y2="{{f $c.PlotBottom}}"/><text x="{{f .X}}" y="{{f $c.PlotBottom}}" dy="14" text-anchor="middle">{{.Label}}</text>{{end}}
{{range .YTicks}}<text x="194" y="{{f .X}}" dy="4" text-anchor="end">{{.Label}}</text>{{end}}</g>
<path class="area" d="{{.Area}}"/>
{{range .Over}}<rect class="over" x="{{f .X}}" y="{{f .Y}}" width="{{f .W}}" height="{{f .H}}"><title>{{.Title}}</title></rect>{{end}}
{{if .ShowBudget}}<line class="budget" x1="200" x2="{{.Width}}" y1="{{f .BudgetY}}" y2="{{f .BudgetY}}"/><text class="budget" x="{{.Width}}" y="{{f .BudgetY}}" dy="-4" text-anchor="end">{{.BudgetLabel}}</text>{{end}}
{{range .Hover}}<rect class="hover" x="{{f .X}}" y="{{f .Y}}" width="{{f .W}}" height="{{f .H}}"><title>{{.Title}}</title></rect>{{end}}
</svg>
{{end}}
{{end}}`
