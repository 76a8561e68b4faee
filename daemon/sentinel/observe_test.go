package sentinel

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

func TestFile(t *testing.T) {
	const required = "*** System restart required ***\n"
	tests := map[string]struct {
		// file and pkgs are written when not nil; a directory when "/".
		file, pkgs *string
		mode       os.FileMode
		// want: needed, a problem containing wantProblem, the reason
		// containing wantReason.
		wantNeeded  bool
		wantProblem string
		wantReason  string
	}{
		"absent":                     {},
		"only the .pkgs (left over)": {pkgs: ptr("linux-image-amd64\n")},
		"present, no .pkgs":          {file: ptr(required), wantNeeded: true, wantReason: "System restart required"},
		"present with packages, each once in order": {
			file: ptr(required), pkgs: ptr("linux-image-6.1.0-18-amd64\nlibc6:amd64\n\nlinux-image-6.1.0-18-amd64\n"),
			wantNeeded: true, wantReason: "packages linux-image-6.1.0-18-amd64, libc6:amd64",
		},
		"present, empty": {file: ptr(""), wantNeeded: true, wantReason: "the host needs a reboot (reboot sentinel)"},
		"a directory":    {file: ptr("/"), wantProblem: "not a regular file"},
		"too large":      {file: ptr(strings.Repeat("x", MaxFileSize+1)), wantProblem: "larger than"},
		"huge .pkgs":     {file: ptr(required), pkgs: ptr(strings.Repeat("libc6\n", MaxFileSize/6+1)), wantProblem: "larger than"},
		"binary .pkgs":   {file: ptr(required), pkgs: ptr("libc6\n\xff\xfe\n"), wantProblem: "not UTF-8"},
		".pkgs with a line that is no package": {
			file: ptr(required), pkgs: ptr("libc6\n; rm -rf / \x1b[31m\n"), wantProblem: "line 2 is not a package name",
		},
		".pkgs with a name too long": {file: ptr(required), pkgs: ptr(strings.Repeat("a", 129) + "\n"), wantProblem: "line 1 is not a package name"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			path := filepath.Join(t.TempDir(), "reboot-required")
			write(t, path, tt.file)
			write(t, path+".pkgs", tt.pkgs)
			o := File{Path: path}.Check(context.Background())
			g.Expect(o.Needed).To(Equal(tt.wantNeeded), "%+v", o)
			if tt.wantProblem != "" {
				g.Expect(o.Problem).To(ContainSubstring(tt.wantProblem))
				g.Expect(o.Fingerprint).To(BeEmpty())
			} else {
				g.Expect(o.Problem).To(BeEmpty())
			}
			if tt.wantNeeded {
				g.Expect(o.Reason).To(ContainSubstring(tt.wantReason))
				g.Expect(v1alpha1.CheckReason(o.Reason)).To(Succeed())
				g.Expect(o.Fingerprint).To(MatchRegexp(`^[0-9a-f]{64}$`))
			}
		})
	}
}

// A sentinel the daemon cannot open, or one that is no file, is reported,
// and the daemon never waits on it: a FIFO would block a plain open until a
// writer came.
func TestFileUnreadable(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	notDir := filepath.Join(dir, "file")
	if err := os.WriteFile(notDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	withFifoPkgs := filepath.Join(dir, "reboot-required")
	if err := os.WriteFile(withFifoPkgs, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(withFifoPkgs+".pkgs", 0o644); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		fifo:                              "not a regular file",
		filepath.Join(notDir, "sentinel"): "unreadable",
		withFifoPkgs:                      "not a regular file",
	} {
		g := NewWithT(t)
		o := File{Path: path}.Check(context.Background())
		g.Expect(o.Needed).To(BeFalse(), path)
		g.Expect(o.Problem).To(ContainSubstring(want), path)
	}
}

func TestFileFingerprint(t *testing.T) {
	g := NewWithT(t)
	path := filepath.Join(t.TempDir(), "reboot-required")
	look := func(file, pkgs *string) string {
		write(t, path, file)
		_ = os.Remove(path + ".pkgs")
		write(t, path+".pkgs", pkgs)
		o := File{Path: path}.Check(context.Background())
		g.Expect(o.Needed).To(BeTrue())
		return o.Fingerprint
	}
	a := look(ptr("x\n"), ptr("libc6\n"))
	g.Expect(look(ptr("x\n"), ptr("libc6\n"))).To(Equal(a), "the same sentinel rewritten is the same")
	g.Expect(look(ptr("x\n"), ptr("libc6\nlinux-image-amd64\n"))).NotTo(Equal(a), "new packages change it")
	g.Expect(look(ptr("x\n"), nil)).NotTo(Equal(a), "no .pkgs is another sentinel")
	g.Expect(look(ptr("x\n"), ptr(""))).NotTo(Equal(look(ptr("x\n"), nil)), "an empty .pkgs is not an absent one")
}

func TestFileReasonFitsManyPackages(t *testing.T) {
	g := NewWithT(t)
	var pkgs []string
	for i := range 400 {
		pkgs = append(pkgs, "package-with-a-long-name-"+strings.Repeat("x", i%40))
	}
	r := fileReason([]byte("x"), pkgs)
	g.Expect(len(r)).To(BeNumerically("<=", v1alpha1.MaxReasonLength))
	g.Expect(r).To(MatchRegexp(`\(\+\d+ more\)$`))
}

func TestCommand(t *testing.T) {
	dir := t.TempDir()
	script := func(name, body string) []string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return []string{p, "-r"}
	}
	tests := map[string]struct {
		argv        []string
		timeout     time.Duration
		wantNeeded  bool
		wantProblem string
		wantReason  string
	}{
		"exit 0: no reboot": {argv: script("clear", "echo 'No core libraries or services have been updated since boot-up.'; exit 0")},
		"exit 1: a reboot": {
			argv:       script("needed", "printf 'Core libraries or services have been updated since boot-up:\\n  * kernel\\n\\nReboot is required.\\n'; exit 1"),
			wantNeeded: true, wantReason: "Core libraries or services have been updated since boot-up: * kernel Reboot is required.",
		},
		"exit 2: reported": {argv: script("broken", "echo 'Error: rpmdb open failed' >&2; exit 2"), wantProblem: "exited 2"},
		"garbage and exit 3": {
			argv: script("garbage", "head -c 200000 /dev/zero | tr '\\0' 'x'; printf '\\001\\377' >&2; exit 3"), wantProblem: "exited 3",
		},
		"not found": {argv: []string{filepath.Join(dir, "no-such-command")}, wantProblem: "could not run"},
		"killed":    {argv: script("killed", "kill -9 $$"), wantProblem: "could not run"},
		"hangs":     {argv: script("hangs", "exec sleep 60"), timeout: 200 * time.Millisecond, wantProblem: "did not finish in time"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			timeout := tt.timeout
			if timeout == 0 {
				timeout = 30 * time.Second
			}
			start := time.Now()
			o := Command{Argv: tt.argv, Timeout: timeout}.Check(context.Background())
			g.Expect(time.Since(start)).To(BeNumerically("<", 20*time.Second))
			g.Expect(o.Needed).To(Equal(tt.wantNeeded), "%+v", o)
			if tt.wantProblem != "" {
				g.Expect(o.Problem).To(ContainSubstring(tt.wantProblem))
				g.Expect(len(o.Problem)).To(BeNumerically("<", 1024))
			} else {
				g.Expect(o.Problem).To(BeEmpty())
			}
			if tt.wantNeeded {
				g.Expect(o.Reason).To(ContainSubstring(tt.wantReason))
				g.Expect(v1alpha1.CheckReason(o.Reason)).To(Succeed())
				g.Expect(o.Fingerprint).To(MatchRegexp(`^[0-9a-f]{64}$`))
			}
		})
	}
}

func ptr(s string) *string { return &s }

// write writes content to path: nothing when nil, a directory when "/".
func write(t *testing.T, path string, content *string) {
	t.Helper()
	var err error
	switch {
	case content == nil:
		return
	case *content == "/":
		err = os.Mkdir(path, 0o755)
	default:
		err = os.WriteFile(path, []byte(*content), 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
}
