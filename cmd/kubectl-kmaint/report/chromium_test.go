package report

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// ChromiumEnv names a Chromium (or Chrome) binary for the render test; by
// default the first of chromiumNames on $PATH.
const ChromiumEnv = "KMAINT_CHROMIUM"

var chromiumNames = []string{"chromium", "chromium-browser", "google-chrome", "headless_shell"}

// The window the page is shot in.
const shotWidth, shotHeight = 1400, 900

// chromiumBinary finds Chromium, or skips the test; under CI it fails, as
// CI must run the render test (hack/install-test-deps.sh installs it).
func chromiumBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv(ChromiumEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("$%s: %v", ChromiumEnv, err)
		}
		return p
	}
	for _, name := range chromiumNames {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "no chromium on $PATH (nor $" + ChromiumEnv + "): run hack/install-test-deps.sh (Debian's chromium package)"
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// runChromium runs headless Chromium on args and returns its stdout. It
// kills Chromium's whole process group if it has not finished within the
// timeout: a headless Chromium can hang rather than exit.
func runChromium(t *testing.T, bin string, args ...string) ([]byte, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	base := []string{
		"--headless", "--no-sandbox", // root has no sandbox
		"--disable-gpu", "--disable-dev-shm-usage", "--no-first-run", "--hide-scrollbars",
		"--user-data-dir=" + t.TempDir(),
	}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("chromium hung: killed after %v\n%s", took, tail(stderr.String()))
	}
	if err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, tail(stderr.String()))
	}
	return stdout.Bytes(), took
}

func tail(s string) string {
	if len(s) > 4000 {
		return "…" + s[len(s)-4000:]
	}
	return s
}

// TestRenderInChromium renders the page in a real browser and checks that
// it shows what it should: the screenshot has the timeline's bars where the
// timeline is, and the DOM the browser built has a row per node.
func TestRenderInChromium(t *testing.T) {
	bin := chromiumBinary(t)
	items, mpools, nodes, now := fixture()
	r, err := Build(items, mpools, nodes, now)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	url := writePage(t, r, dir)

	shot := filepath.Join(dir, "report.png")
	_, took := runChromium(t, bin, "--screenshot="+shot, fmt.Sprintf("--window-size=%d,%d", shotWidth, shotHeight), url)
	img := readPNG(t, shot)
	t.Logf("screenshot in %v", took.Round(time.Millisecond))
	// The plot starts past the body's margin and the label column. The
	// legend's swatches have these colors too, but only 140 pixels each.
	plot := image.Rect(24+labelWidth, 0, shotWidth, shotHeight)
	rebooting := countNear(img, plot, color.RGBA{0x3b, 0x82, 0xf6, 0xff})
	draining := countNear(img, plot, color.RGBA{0xf9, 0x73, 0x16, 0xff})
	t.Logf("plot: %d rebooting-blue and %d draining-orange pixels", rebooting, draining)
	if rebooting < 1000 || draining < 1000 {
		t.Errorf("the timeline's bars are missing from the screenshot: %d rebooting-blue and %d draining-orange pixels in the plot, want 1000 of each", rebooting, draining)
	}
	if white := countNear(img, img.Bounds(), color.RGBA{0xff, 0xff, 0xff, 0xff}); white > shotWidth*shotHeight*98/100 {
		t.Errorf("the screenshot is blank: %d of %d pixels white", white, shotWidth*shotHeight)
	}

	dom, took := runChromium(t, bin, "--dump-dom", url)
	t.Logf("dump-dom: %d bytes of DOM in %v", len(dom), took.Round(time.Millisecond))
	for _, s := range []string{`id="timeline"`, `class="chart"`, "DrainTimeout"} {
		if !bytes.Contains(dom, []byte(s)) {
			t.Errorf("the DOM lacks %s", s)
		}
	}
	for _, node := range []string{"db-1", "db-2", "web-1", "web-2", "web-3", "lonely", "ghost"} {
		if !bytes.Contains(dom, []byte(`class="row" data-node="`+node+`"`)) {
			t.Errorf("the DOM has no row for %s", node)
		}
	}
	if n := strings.Count(string(dom), `class="row"`); n != 7 {
		t.Errorf("the DOM has %d rows, want 7", n)
	}
}

// TestRenderLargeInChromium: a browser renders a 2000-node rollout's page
// in reasonable time, and the thin rows still show.
func TestRenderLargeInChromium(t *testing.T) {
	bin := chromiumBinary(t)
	items, mpools, nodes := rollout(2000, 50)
	r, err := Build(items, mpools, nodes, at(3000))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	url := writePage(t, r, dir)
	shot := filepath.Join(dir, "large.png")
	_, took := runChromium(t, bin, "--screenshot="+shot, fmt.Sprintf("--window-size=%d,%d", shotWidth, shotHeight), url)
	img := readPNG(t, shot)
	// Compact, the budget chart comes first and the timeline starts lower.
	plot := image.Rect(24+labelWidth, 0, shotWidth, shotHeight)
	rebooting := countNear(img, plot, color.RGBA{0x3b, 0x82, 0xf6, 0xff})
	t.Logf("screenshot of 2000 rows in %v; %d rebooting-blue pixels in the plot", took.Round(time.Millisecond), rebooting)
	if rebooting < 500 {
		t.Errorf("%d rebooting-blue pixels in the plot, want 500", rebooting)
	}
}

// writePage writes the report into dir and returns its file:// URL.
func writePage(t *testing.T, r *Report, dir string) string {
	t.Helper()
	page := filepath.Join(dir, "report.html")
	f, err := os.Create(page)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.WriteHTML(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return "file://" + page
}

func readPNG(t *testing.T, path string) image.Image {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	img, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if b := img.Bounds(); b.Dx() != shotWidth || b.Dy() != shotHeight {
		t.Fatalf("screenshot is %dx%d, want %dx%d", b.Dx(), b.Dy(), shotWidth, shotHeight)
	}
	t.Logf("screenshot: %d bytes of PNG", len(raw))
	return img
}

// countNear counts the pixels in r within a small distance of c.
func countNear(img image.Image, r image.Rectangle, c color.RGBA) int {
	near := func(a uint32, b uint8) bool {
		d := int(a>>8) - int(b)
		return d > -12 && d < 12
	}
	n := 0
	r = r.Intersect(img.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			pr, pg, pb, _ := img.At(x, y).RGBA()
			if near(pr, c.R) && near(pg, c.G) && near(pb, c.B) {
				n++
			}
		}
	}
	return n
}
