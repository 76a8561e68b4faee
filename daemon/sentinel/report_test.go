package sentinel

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// What the sentinel container sees reaches the daemon unchanged; a report
// that is missing, stale, malformed or impossible asks for nothing.
func TestReport(t *testing.T) {
	now := time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	fp := strings.Repeat("ab", 32)
	tests := map[string]struct {
		// write writes the report file; nil writes none.
		write       func(t *testing.T, path string)
		want        Observation
		wantProblem string
	}{
		"missing": {wantProblem: "no sentinel report"},
		"clear": {
			write: func(t *testing.T, p string) { must(t, WriteReport(p, Observation{}, now)) },
			want:  Observation{},
		},
		"needed": {
			write: func(t *testing.T, p string) {
				must(t, WriteReport(p, Observation{Needed: true, Fingerprint: fp, Reason: "packages libc6"}, now))
			},
			want: Observation{Needed: true, Fingerprint: fp, Reason: "packages libc6"},
		},
		"a problem the container saw": {
			write: func(t *testing.T, p string) { must(t, WriteReport(p, Observation{Problem: "not a regular file"}, now)) },
			want:  Observation{Problem: "not a regular file"},
		},
		"stale (the container stopped)": {
			write: func(t *testing.T, p string) {
				must(t, WriteReport(p, Observation{Needed: true, Fingerprint: fp, Reason: "x"}, now.Add(-10*time.Minute)))
			},
			wantProblem: "has stopped looking",
		},
		"from the future": {
			write:       func(t *testing.T, p string) { must(t, WriteReport(p, Observation{}, now.Add(time.Hour))) },
			wantProblem: "has stopped looking",
		},
		"malformed": {
			write:       func(t *testing.T, p string) { must(t, os.WriteFile(p, []byte("{"), 0o644)) },
			wantProblem: "malformed",
		},
		"a fingerprint no checker makes": {
			write: func(t *testing.T, p string) {
				must(t, WriteReport(p, Observation{Needed: true, Fingerprint: "x", Reason: "r"}, now))
			},
			wantProblem: "not 64 hex digits",
		},
		"a reason with control characters": {
			write: func(t *testing.T, p string) {
				must(t, WriteReport(p, Observation{Needed: true, Fingerprint: fp, Reason: "a\x1bb"}, now))
			},
			wantProblem: "control character",
		},
		"huge": {
			write:       func(t *testing.T, p string) { must(t, os.WriteFile(p, []byte(strings.Repeat(" ", 20<<10)), 0o644)) },
			wantProblem: "more than the",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			path := filepath.Join(t.TempDir(), "report.json")
			if tt.write != nil {
				tt.write(t, path)
			}
			got := Reported{Path: path, MaxAge: 3 * time.Minute, Now: clock}.Check(context.Background())
			if tt.wantProblem != "" {
				g.Expect(got.Needed).To(BeFalse())
				g.Expect(got.Problem).To(ContainSubstring(tt.wantProblem))
				return
			}
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

// Watch writes what the file says, and the report reads it back.
func TestWatchReportsTheFile(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	file, rep := filepath.Join(dir, "reboot-required"), filepath.Join(dir, "report.json")
	must(t, os.WriteFile(file, []byte("*** System restart required ***\n"), 0o644))
	must(t, os.WriteFile(file+".pkgs", []byte("libc6\n"), 0o644))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- Watch(ctx, File{Path: file}, rep, 10*time.Millisecond, time.Now) }()
	want := File{Path: file}.Check(ctx)
	g.Eventually(func() Observation {
		return Reported{Path: rep, MaxAge: time.Minute, Now: time.Now}.Check(ctx)
	}).Should(Equal(want))
	must(t, os.Remove(file))
	g.Eventually(func() Observation {
		return Reported{Path: rep, MaxAge: time.Minute, Now: time.Now}.Check(ctx)
	}).Should(Equal(Observation{}))
	cancel()
	g.Eventually(done).Should(Receive(BeNil()))
	fi, err := os.Stat(rep)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fi.Mode().Perm()).To(Equal(os.FileMode(0o644)))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A daemon that has just started (a new boot) finds no report yet: nothing
// is known, and nothing is wrong, until the report is late; then it is a
// problem. A report that says it is pending is not one a container writes.
func TestReportNotThereYetIsPendingNotAProblem(t *testing.T) {
	g := NewWithT(t)
	start := time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)
	now := start
	path := filepath.Join(t.TempDir(), "report.json")
	r := Reported{Path: path, MaxAge: 3 * time.Minute, Now: func() time.Time { return now }, Started: start}
	g.Expect(r.Check(context.Background())).To(Equal(Observation{Pending: true}))
	now = start.Add(3*time.Minute - time.Second)
	g.Expect(r.Check(context.Background())).To(Equal(Observation{Pending: true}))
	now = start.Add(3 * time.Minute)
	g.Expect(r.Check(context.Background()).Problem).To(ContainSubstring("no sentinel report"))

	must(t, WriteReport(path, Observation{Pending: true}, now))
	g.Expect(r.Check(context.Background()).Problem).To(ContainSubstring("pending: only the daemon says"))
}
