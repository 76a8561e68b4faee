package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/net/html"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

func TestBuild(t *testing.T) {
	items, mpools, nodes, now := fixture()
	r, err := Build(items, mpools, nodes, now)
	if err != nil {
		t.Fatal(err)
	}

	type poolWant struct {
		nodes, max int
		rows       []string
		peak       int
		over       time.Duration
	}
	want := map[string]poolWant{
		"db":                     {nodes: 2, max: 1, rows: []string{"db-1", "db-2"}, peak: 1},
		"web":                    {nodes: 3, max: 1, rows: []string{"web-1", "web-2", "web-3"}, peak: 2, over: 30 * time.Second},
		v1alpha1.DefaultPoolName: {nodes: 1, max: 1, rows: []string{"lonely"}, peak: 1},
		GonePool:                 {rows: []string{"ghost"}, peak: 1},
	}
	var order []string
	for _, p := range r.Pools {
		order = append(order, p.Name)
		w, ok := want[p.Name]
		if !ok {
			t.Errorf("unexpected pool %s", p.Name)
			continue
		}
		var rows []string
		for _, row := range p.Rows {
			rows = append(rows, row.Node)
		}
		got := poolWant{nodes: p.Nodes, max: p.MaxUnavailable, rows: rows, peak: p.Peak, over: p.OverBudget}
		if diff := cmp.Diff(w, got, cmp.AllowUnexported(poolWant{})); diff != "" {
			t.Errorf("pool %s (-want +got):\n%s", p.Name, diff)
		}
	}
	if diff := cmp.Diff([]string{"db", "web", v1alpha1.DefaultPoolName, GonePool}, order); diff != "" {
		t.Errorf("pool order (-want +got):\n%s", diff)
	}

	// web-1 rebooted twice; the two maintenances share its row, in order.
	web := r.Pools[1]
	if tl := web.Rows[0].Timelines; len(tl) != 2 || tl[0].Name != "web-1-a" || tl[1].Name != "web-1-b" {
		t.Errorf("web-1's row: %+v", tl)
	}
	steps := []Step{{at(60), 1}, {at(120), 0}, {at(180), 1}, {at(230), 2}, {at(260), 1}, {at(310), 0}, {at(440), 1}, {at(480), 0}}
	if diff := cmp.Diff(steps, web.Steps); diff != "" {
		t.Errorf("web steps (-want +got):\n%s", diff)
	}
	// db-2's maintenance is still draining: counted until now.
	if diff := cmp.Diff([]Step{{at(60), 1}, {at(660), 0}, {at(680), 1}, {at(720), 0}}, r.Pools[0].Steps); diff != "" {
		t.Errorf("db steps (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]SourceCounts{{Source: "api", Succeeded: 1}, {Source: "config", Succeeded: 3}}, web.Counts); diff != "" {
		t.Errorf("web counts (-want +got):\n%s", diff)
	}

	s := r.Summary
	if s.Maintenances != 8 || s.Succeeded != 6 || s.Failed != 1 || s.Open != 1 || !s.Running {
		t.Errorf("summary counts %+v", s)
	}
	if s.Makespan != 720*time.Second {
		t.Errorf("makespan %v, want 12m (first request to now, one still open)", s.Makespan)
	}
	if len(s.Failures) != 1 || s.Failures[0].FailReason != "DrainTimeout" {
		t.Errorf("failures %+v", s.Failures)
	}
	stats := map[string]PhaseStat{}
	for _, st := range s.Phases {
		stats[st.Name] = st
	}
	// Rebooting: 30, 20, 40, 40, 25, 10 seconds (the failed drain and the
	// open one never rebooted).
	if st := stats["rebooting"]; st.N != 6 || st.P50 != 25*time.Second || st.P90 != 40*time.Second || st.Max != 40*time.Second {
		t.Errorf("rebooting %+v", st)
	}
	// Draining includes the failed drain's 600 s, not the open one.
	if st := stats["draining"]; st.N != 7 || st.Max != 600*time.Second {
		t.Errorf("draining %+v", st)
	}
	if r.Span.Start != at(0) || r.Span.End != now {
		t.Errorf("span %v", r.Span)
	}
}

func TestBuildRefusesTwoOfOneName(t *testing.T) {
	items, mpools, nodes, now := fixture()
	items = append(items, items[0])
	if _, err := Build(items, mpools, nodes, now); err == nil || !strings.Contains(err.Error(), "web-1-a") {
		t.Errorf("err = %v, want one naming web-1-a", err)
	}
}

func TestBuildEmpty(t *testing.T) {
	r, err := Build(nil, nil, nil, t0)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := r.WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "no maintenances") {
		t.Errorf("an empty history should say so")
	}
}

// TestWriteHTML checks the page's structure: a row per node, a bar per
// stretch, a marker per outcome, a chart per pool, and nothing fetched.
func TestWriteHTML(t *testing.T) {
	items, mpools, nodes, now := fixture()
	r, err := Build(items, mpools, nodes, now)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := r.WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	doc, err := html.Parse(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}

	count := map[string]int{}
	var rowNodes []string
	var external []string
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			cls := attr(n, "class")
			switch {
			case n.Data == "g" && cls == "row":
				rowNodes = append(rowNodes, attr(n, "data-node"))
			case n.Data == "rect" && strings.HasPrefix(cls, "bar "):
				count["bar"]++
				for _, c := range strings.Fields(cls)[1:] {
					count[c]++
				}
			case n.Data == "circle" && cls == "back":
				count["back"]++
			case n.Data == "path" && cls == "fail":
				count["failmark"]++
			case n.Data == "g" && cls == "nm":
				count["nm"]++
				if !hasTitle(n) {
					t.Errorf("a maintenance without a hover title")
				}
			case n.Data == "svg" && cls == "chart":
				count["chart"]++
			case n.Data == "script", n.Data == "link", n.Data == "img", n.Data == "iframe":
				external = append(external, n.Data)
			}
			for _, a := range []string{"src", "href"} {
				if v := attr(n, a); v != "" {
					external = append(external, a+"="+v)
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)

	if diff := cmp.Diff([]string{"db-1", "db-2", "web-1", "web-2", "web-3", "lonely", "ghost"}, rowNodes); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
	// Bars: 4 for each of the 6 maintenances that went the whole way, 2
	// for the failed drain (waiting, draining), 2 for the open one.
	want := map[string]int{
		"bar": 28, "k-daemon": 6, "k-gate": 8, "k-draining": 8, "k-rebooting": 6,
		"open": 1, "failed": 2, "back": 6, "failmark": 1, "chart": 3, "nm": 8,
	}
	if diff := cmp.Diff(want, count); diff != "" {
		t.Errorf("element counts (-want +got):\n%s", diff)
	}
	if len(external) > 0 {
		t.Errorf("the page must be self-contained, but has %v", external)
	}
	page := buf.String()
	for _, s := range []string{"DrainTimeout", "pod db/postgres-0 blocked", "monthly", "maxUnavailable 1", "over budget for 30s"} {
		if !strings.Contains(page, s) {
			t.Errorf("page lacks %q", s)
		}
	}
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// hasTitle reports whether n has an SVG <title> child with text.
func hasTitle(n *html.Node) bool {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode && c.Data == "title" && c.FirstChild != nil && strings.TrimSpace(c.FirstChild.Data) != "" {
			return true
		}
	}
	return false
}
