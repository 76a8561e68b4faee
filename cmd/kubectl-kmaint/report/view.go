package report

import (
	"fmt"
	"strings"
	"time"
)

// page is what the template renders: every number already a coordinate or
// a string, so that the template only places them.
type page struct {
	Generated, From, To, Length string
	Cards                       []card
	Counts                      []countRow
	Phases                      []phaseRow
	Failures                    []failureRow
	CheckFailures               []checkRow
	Legend                      []legendItem
	Timeline                    timelineView
	Charts                      []chartView
}

type card struct{ Value, Label, Class string }

type countRow struct {
	Pool, Source            string
	Succeeded, Failed, Open int
	First                   bool
	PoolRows                int
}

type phaseRow struct{ Name, N, P50, P90, Max string }

type failureRow struct{ At, Node, Name, Source, Reason, Message string }

// checkRow is a node that failed a health check after its reboot.
type checkRow struct{ At, Node, Name, Phase, Reason, Message string }

type legendItem struct{ Class, Label string }

type timelineView struct {
	Width, Height int
	Compact       bool
	Ticks         []tick
	NowX          float64
	ShowNow       bool
	Groups        []groupView
}

type groupView struct {
	Y, TextY float64
	Name     string
	Info     string
	Rows     []rowView
}

type rowView struct {
	Y, TextY, LineY float64
	Label, Title    string
	Maintenances    []nmView
}

// nmView is one maintenance's bars and end mark, under one hover title.
type nmView struct {
	Title string
	Bars  []barView
	Back  *markView
	Fail  *markView
	// Check marks a failed health check, a ▲ at its time.
	Check *markView
}

type barView struct {
	X, Y, W, H float64
	Class      string
	Title      string
}

type markView struct {
	X, Y, R float64
	// Cross is the path of a failure's ✕.
	Cross string
	Text  string
	// Left puts the text left of the mark, where the page ends too soon.
	Left bool
}

type chartView struct {
	Name, Info          string
	Width, Height       int
	Ticks               []tick
	Area                string
	BudgetY             float64
	BudgetLabel         string
	ShowBudget          bool
	Over                []barView
	Hover               []barView
	YTicks              []tick
	PlotTop, PlotBottom float64
}

func (r *Report) page() page {
	s := r.Summary
	p := page{
		Generated: r.Now.UTC().Format(time.RFC3339),
		From:      r.Span.Start.UTC().Format("2006-01-02 15:04:05"),
		To:        r.Span.End.UTC().Format("2006-01-02 15:04:05"),
		Length:    human(r.Span.Duration()),
	}
	makespan := human(s.Makespan)
	if s.Running {
		makespan += " so far"
	}
	peak := 0
	for _, pl := range r.Pools {
		peak = max(peak, pl.Peak)
	}
	p.Cards = []card{
		{fmt.Sprint(s.Maintenances), "maintenances", ""},
		{fmt.Sprint(s.Succeeded), "succeeded", "ok"},
		{fmt.Sprint(s.Failed), "failed", failedClass(s.Failed)},
		{fmt.Sprint(s.Open), "still open", ""},
		{makespan, "makespan", ""},
		{fmt.Sprint(peak), "most unavailable at once", ""},
	}
	if n := len(s.CheckFailures); n > 0 || s.Halted > 0 {
		p.Cards = append(p.Cards, card{fmt.Sprint(n), "failed health checks", failedClass(n)}, card{fmt.Sprint(s.Halted), "pools halted now", failedClass(s.Halted)})
	}
	for _, pl := range r.Pools {
		for i, c := range pl.Counts {
			p.Counts = append(p.Counts, countRow{Pool: pl.Name, Source: string(c.Source), Succeeded: c.Succeeded, Failed: c.Failed, Open: c.Open, First: i == 0, PoolRows: len(pl.Counts)})
		}
	}
	for _, st := range s.Phases {
		row := phaseRow{Name: kindLabel(st.Name), N: fmt.Sprint(st.N), P50: "–", P90: "–", Max: "–"}
		if st.N > 0 {
			row.P50, row.P90, row.Max = human(st.P50), human(st.P90), human(st.Max)
		}
		p.Phases = append(p.Phases, row)
	}
	for _, t := range s.Failures {
		p.Failures = append(p.Failures, failureRow{At: t.Failed.UTC().Format("2006-01-02 15:04:05"), Node: t.Node, Name: t.Name, Source: string(t.Source), Reason: t.FailReason, Message: t.FailMessage})
	}
	for _, t := range s.CheckFailures {
		p.CheckFailures = append(p.CheckFailures, checkRow{At: t.CheckFailed.UTC().Format("2006-01-02 15:04:05"), Node: t.Node, Name: t.Name,
			Phase: string(t.Phase), Reason: t.CheckReason, Message: t.CheckMessage})
	}
	for _, k := range Kinds() {
		if !k.Hooks() || s.Hooks {
			p.Legend = append(p.Legend, legendItem{"k-" + string(k), kindLabel(string(k))})
		}
	}
	p.Legend = append(p.Legend, legendItem{"back", "back (new boot, Ready)"}, legendItem{"fail", "failed"})
	if len(s.CheckFailures) > 0 {
		p.Legend = append(p.Legend, legendItem{"check", "health check failed (pool halted)"})
	}
	p.Legend = append(p.Legend, legendItem{"open", "still in progress"})

	sc := scale{span: r.Span}
	p.Timeline = r.timeline(sc)
	for _, pl := range r.Pools {
		if pl.Name == GonePool {
			continue
		}
		p.Charts = append(p.Charts, chart(pl, sc))
	}
	return p
}

func failedClass(n int) string {
	if n > 0 {
		return "bad"
	}
	return ""
}

func (r *Report) timeline(sc scale) timelineView {
	rows := 0
	for _, pl := range r.Pools {
		rows += len(pl.Rows)
	}
	v := timelineView{Width: pageWidth, Compact: rows > compactRows}
	rh := float64(rowHeight)
	if v.Compact {
		rh = compactRowHeight
	}
	barH := rh - 6
	if v.Compact {
		barH = rh - 1
	}
	y := float64(axisHeight)
	for _, pl := range r.Pools {
		if len(pl.Rows) == 0 {
			continue
		}
		g := groupView{Y: y, TextY: y + 17, Name: ellipsis(pl.Name, 22), Info: poolInfo(pl)}
		y += groupHeight
		for _, row := range pl.Rows {
			rv := rowView{Y: y, TextY: y + rh/2 + 4, LineY: y + rh/2, Label: ellipsis(row.Node, 28), Title: row.Node}
			if len(row.AlsoIn) > 0 {
				rv.Title += " (also in " + strings.Join(row.AlsoIn, ", ") + ": admitted nowhere)"
			}
			for i := range row.Timelines {
				t := &row.Timelines[i]
				m := nmView{Title: describe(t)}
				for _, s := range t.Segments {
					x0, x1 := sc.x(s.Start), sc.x(s.End)
					b := barView{X: x0, Y: y + (rh-barH)/2, W: max(x1-x0, 1), H: barH, Class: "bar k-" + string(s.Kind)}
					if s.Open {
						b.Class += " open"
					}
					if !t.Failed.IsZero() {
						b.Class += " failed"
					}
					m.Bars = append(m.Bars, b)
				}
				if !t.CheckFailed.IsZero() {
					x, r := sc.x(t.CheckFailed), min(5, rh/2)
					m.Check = &markView{X: x, Y: rv.LineY, R: r, Cross: fmt.Sprintf("M%.1f %.1f L%.1f %.1f L%.1f %.1f Z",
						x, rv.LineY-r, x+r, rv.LineY+r, x-r, rv.LineY+r)}
					// Written out while the halt holds; after, hovering and the table tell it.
					if !v.Compact && !t.Done() {
						m.Check.Text = ellipsis(t.CheckReason+": "+t.CheckMessage, 60)
						m.Check.Left = m.Check.X > labelWidth+plotWidth*0.6
					}
				}
				switch {
				case !t.Back.IsZero():
					m.Back = &markView{X: sc.x(t.Back), Y: rv.LineY, R: min(4, rh/2)}
				case !t.Failed.IsZero():
					x, r := sc.x(t.Failed), min(4, rh/2)
					m.Fail = &markView{X: x, Y: rv.LineY, R: r, Cross: fmt.Sprintf("M%.1f %.1f L%.1f %.1f M%.1f %.1f L%.1f %.1f",
						x-r, rv.LineY-r, x+r, rv.LineY+r, x+r, rv.LineY-r, x-r, rv.LineY+r)}
					if !v.Compact {
						m.Fail.Text = ellipsis(t.FailReason+": "+t.FailMessage, 60)
						m.Fail.Left = m.Fail.X > labelWidth+plotWidth*0.6
					}
				}
				rv.Maintenances = append(rv.Maintenances, m)
			}
			g.Rows = append(g.Rows, rv)
			y += rh
		}
		v.Groups = append(v.Groups, g)
	}
	v.Height = int(y) + 8
	v.Ticks = ticks(sc, 10)
	if r.Summary.Running {
		v.ShowNow, v.NowX = true, sc.x(r.Now)
	}
	return v
}

func poolInfo(pl Pool) string {
	if pl.Name == GonePool {
		return fmt.Sprintf("%d node(s) with maintenances, pool unknown", len(pl.Rows))
	}
	s := fmt.Sprintf("%d of %d nodes rebooted or asked to · maxUnavailable %s = %d", len(pl.Rows), pl.Nodes, pl.Budget, pl.MaxUnavailable)
	if pl.BudgetError != "" {
		s += " (" + pl.BudgetError + ")"
	}
	if h := pl.Halt; h != nil {
		n := h.Nodes[len(h.Nodes)-1]
		s += fmt.Sprintf(" · HALTED since %s: node %s failed check %s", clock(h.Since.Time), n.Node, n.Check)
		if n.Value != "" {
			s += " (value " + n.Value + ")"
		}
		if len(h.Nodes) > 1 {
			s += fmt.Sprintf(" and %d more", len(h.Nodes)-1)
		}
	}
	return s
}

// chart draws a pool's unavailable nodes over time as a step area, its
// budget as a dashed line, and the time over budget in red.
func chart(pl Pool, sc scale) chartView {
	v := chartView{
		Name: pl.Name, Width: pageWidth, Height: chartHeight, Ticks: ticks(sc, 10),
		PlotTop: chartPlotTop, PlotBottom: chartPlotBottom, ShowBudget: true,
		BudgetLabel: fmt.Sprintf("maxUnavailable %d", pl.MaxUnavailable),
	}
	v.Info = fmt.Sprintf("peak %d of %d allowed", pl.Peak, pl.MaxUnavailable)
	if pl.OverBudget > 0 {
		v.Info += fmt.Sprintf(" · over budget for %s", human(pl.OverBudget))
	}
	top := max(pl.Peak, pl.MaxUnavailable, 1)
	y := func(c int) float64 {
		return chartPlotBottom - float64(c)/float64(top)*(chartPlotBottom-chartPlotTop)
	}
	v.BudgetY = y(pl.MaxUnavailable)
	v.YTicks = []tick{{X: y(0), Label: "0"}, {X: y(top), Label: fmt.Sprint(top)}}
	if pl.MaxUnavailable != top && pl.MaxUnavailable != 0 {
		v.YTicks = append(v.YTicks, tick{X: y(pl.MaxUnavailable), Label: fmt.Sprint(pl.MaxUnavailable)})
	}

	var d strings.Builder
	fmt.Fprintf(&d, "M%.1f %.1f", sc.x(sc.span.Start), y(0))
	for i, st := range pl.Steps {
		x0 := sc.x(st.At)
		fmt.Fprintf(&d, " H%.1f V%.1f", x0, y(st.Count))
		if i+1 == len(pl.Steps) {
			continue
		}
		next := pl.Steps[i+1].At
		x1 := sc.x(next)
		hover := fmt.Sprintf("%s–%s: %d unavailable of %d allowed", clock(st.At), clock(next), st.Count, pl.MaxUnavailable)
		v.Hover = append(v.Hover, barView{X: x0, Y: chartPlotTop, W: max(x1-x0, 1), H: chartPlotBottom - chartPlotTop, Title: hover})
		if st.Count > pl.MaxUnavailable {
			v.Over = append(v.Over, barView{X: x0, Y: y(st.Count), W: max(x1-x0, 1), H: y(pl.MaxUnavailable) - y(st.Count), Title: hover})
		}
	}
	fmt.Fprintf(&d, " H%.1f V%.1f Z", sc.x(sc.span.End), y(0))
	v.Area = d.String()
	return v
}
