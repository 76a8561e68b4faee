package report

import (
	"bytes"
	"image"
	"image/color"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"
)

// A rollout that halted at its third node: the settle time is a stretch of
// its own, which counts against the budget; the two failed health checks
// are listed and marked, the halted pool says which node and check.
func TestGuardedRollout(t *testing.T) {
	items, mpools, nodes, now := guardedFixture()
	r, err := Build(items, mpools, nodes, now)
	if err != nil {
		t.Fatal(err)
	}
	s := r.Summary
	var failed []string
	for _, tl := range s.CheckFailures {
		failed = append(failed, tl.Name+" "+tl.CheckReason)
	}
	if want := []string{"k-2-a HaltResumed", "k-3-a HealthCheckFailed"}; strings.Join(failed, ",") != strings.Join(want, ",") {
		t.Errorf("check failures %v, want %v", failed, want)
	}
	if s.Halted != 1 {
		t.Errorf("%d pools halted, want 1", s.Halted)
	}
	for _, st := range s.Phases {
		if st.Name == string(KindSettling) && (st.N != 2 || st.Max != time.Minute) {
			t.Errorf("settling %+v, want 2 of 1m", st)
		}
	}
	pool := r.Pools[0]
	if pool.Name != "k" || pool.Halt == nil {
		t.Fatalf("pool %+v, want k, halted", pool)
	}
	// k-3 holds its slot from its admission on: settling counts.
	if pool.Peak != 1 || pool.OverBudget != 0 {
		t.Errorf("peak %d, over budget %s; want 1 and none", pool.Peak, pool.OverBudget)
	}
	if got := pool.Steps[len(pool.Steps)-2]; !got.At.Equal(at(260)) || got.Count != 1 {
		t.Errorf("last step %+v, want 1 unavailable from 260s on (k-3 settling still)", got)
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
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			cls := attr(n, "class")
			switch {
			case n.Data == "rect" && strings.Contains(cls, "k-settling"):
				count["settling"]++
			case n.Data == "path" && cls == "check":
				count["checkmark"]++
			case n.Data == "table" && attr(n, "id") == "checkfailures":
				count["checktable"]++
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	if count["settling"] != 3 || count["checkmark"] != 2 || count["checktable"] != 1 {
		t.Errorf("counts %v, want 3 settling bars, 2 check marks, 1 table of failed checks", count)
	}
	page := buf.String()
	for _, want := range []string{
		"HALTED since 10:05:30: node k-3 failed check node-ready (value 0)",
		"settling (back, checks running)",
		"health check failed (pool halted)",
		`<td>k-3-a</td><td>Settling</td><td>HealthCheckFailed</td><td>health check &#34;node-ready&#34; returned 0 (kube_node_status_condition{node=&#34;k-3&#34;})</td>`,
		`<td>k-2-a</td><td>Succeeded</td><td>HaltResumed</td>`,
		"health check failed at 10:05:30 (HealthCheckFailed)",
		"pools halted now",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if got := r.Summary.Phases[3:5]; got[0].Name != string(KindRebooting) || got[1].Name != string(KindSettling) {
		t.Errorf("phases %+v: settling should follow rebooting", r.Summary.Phases)
	}
}

// The settling stretches and the failed checks' marks show in a browser.
func TestRenderGuardedInChromium(t *testing.T) {
	bin := chromiumBinary(t)
	items, mpools, nodes, now := guardedFixture()
	r, err := Build(items, mpools, nodes, now)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	url := writePage(t, r, dir)
	shot := filepath.Join(dir, "report.png")
	runChromium(t, bin, "--screenshot="+shot, "--window-size=1400,900", url)
	img := readPNG(t, shot)
	plot := image.Rect(24+labelWidth, 0, shotWidth, shotHeight)
	settling := countNear(img, plot, color.RGBA{0x14, 0xb8, 0xa6, 0xff})
	check := countNear(img, plot, color.RGBA{0xd9, 0x77, 0x06, 0xff})
	t.Logf("plot: %d settling-teal and %d check-amber pixels", settling, check)
	if settling < 1000 || check < 20 {
		t.Errorf("settling bars or check marks missing from the screenshot: %d teal, %d amber pixels", settling, check)
	}
}
