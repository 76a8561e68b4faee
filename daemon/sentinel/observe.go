package sentinel

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// Observation is one look at the sentinel.
type Observation struct {
	// Needed is true when the host says it needs a reboot.
	Needed bool `json:"needed"`
	// Fingerprint identifies what the sentinel says when Needed: 64 hex
	// digits of SHA-256 over its content (the file and its .pkgs, or the
	// command's exit code and output).
	Fingerprint string `json:"fingerprint,omitempty"`
	// Reason is the request's reason when Needed: what the sentinel says,
	// fitted to v1alpha1.MaxReasonLength.
	Reason string `json:"reason,omitempty"`
	// Problem, when set, says why the sentinel could not be read; Needed is
	// then false: a sentinel kmaint cannot read never reboots a node.
	Problem string `json:"problem,omitempty"`
	// Pending is true when nothing is known yet, and nothing is wrong: a
	// report that has not come yet in a new boot. It asks for nothing, as
	// a Problem, and is not one: a state that every ordinary reboot went
	// through as an error taught people to ignore the real ones.
	Pending bool `json:"pending,omitempty"`
}

// Checker looks at a sentinel. Check never fails: what goes wrong is the
// Observation's Problem.
type Checker interface {
	Check(ctx context.Context) Observation
}

// MaxFileSize is the most kmaint reads of the sentinel file and of its
// .pkgs, in bytes. Debian's file is one line and its .pkgs a package name a
// line; a few hundred packages fit many times over. A larger one is not a
// package tool's, and is reported, not read.
const MaxFileSize = 64 << 10

// maxPackageName is the longest package name read from a .pkgs file; dpkg's
// are far shorter.
const maxPackageName = 128

// packageName is one line of a .pkgs file: a Debian package name, with an
// architecture qualifier where dpkg gives one (libc6:amd64).
var packageName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9+.~_-]*(:[a-z0-9-]+)?$`)

// File is a sentinel file, such as /var/run/reboot-required: present means
// the host needs a reboot. Its companion Path+".pkgs", when present, lists
// the packages that asked for it, one a line; they are the request's reason.
type File struct {
	// Path is where the daemon reads the file.
	Path string
}

var _ Checker = File{}

// Check reads the file and its .pkgs.
func (f File) Check(context.Context) Observation {
	content, present, err := readBounded(f.Path)
	switch {
	case err != nil:
		return Observation{Problem: fmt.Sprintf("sentinel file %s: %v", f.Path, err)}
	case !present:
		return Observation{}
	}
	pkgsPath := f.Path + ".pkgs"
	pkgs, hasPkgs, err := readBounded(pkgsPath)
	if err != nil {
		return Observation{Problem: fmt.Sprintf("sentinel file %s is present, and its package list %s cannot be used: %v; not asking for a reboot until it can", f.Path, pkgsPath, err)}
	}
	var names []string
	if hasPkgs {
		if names, err = parsePackages(pkgs); err != nil {
			return Observation{Problem: fmt.Sprintf("sentinel file %s is present, and its package list %s is malformed: %v; not asking for a reboot until it is fixed or removed", f.Path, pkgsPath, err)}
		}
	}
	h := sha256.New()
	fmt.Fprintf(h, "file\x00%d\x00%s\x00%t\x00%s", len(content), content, hasPkgs, pkgs)
	return Observation{Needed: true, Fingerprint: hex.EncodeToString(h.Sum(nil)), Reason: fileReason(content, names)}
}

// readBounded reads a regular file of at most MaxFileSize bytes; a file
// that does not exist is not present, and no error.
func readBounded(path string) ([]byte, bool, error) {
	// Non-blocking, so that a FIFO put there is refused below rather than
	// waited on; on a regular file the flag changes nothing.
	fh, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	} else if err != nil {
		return nil, false, fmt.Errorf("unreadable: %w", err)
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, false, fmt.Errorf("unreadable: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, false, fmt.Errorf("not a regular file (%s)", fi.Mode().Type())
	}
	b, err := io.ReadAll(io.LimitReader(fh, MaxFileSize+1))
	if err != nil {
		return nil, false, fmt.Errorf("unreadable: %w", err)
	}
	if len(b) > MaxFileSize {
		return nil, false, fmt.Errorf("larger than %d bytes, more than any package tool writes", MaxFileSize)
	}
	return b, true, nil
}

// parsePackages reads a .pkgs file: package names, one a line, in the order
// they asked, each once.
func parsePackages(b []byte) ([]string, error) {
	if !utf8.Valid(b) {
		return nil, errors.New("not UTF-8 text")
	}
	var names []string
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if len(line) > maxPackageName || !packageName.MatchString(line) {
			return nil, fmt.Errorf("line %d is not a package name: %q", i+1, truncate(line, 64))
		}
		if !slices.Contains(names, line) {
			names = append(names, line)
		}
	}
	return names, nil
}

// fileReason says why the file asks: its packages, as many as fit, or else
// its first line.
func fileReason(content []byte, pkgs []string) string {
	const prefix = "the host needs a reboot (reboot sentinel)"
	if len(pkgs) == 0 {
		first, _, _ := strings.Cut(strings.TrimSpace(strings.ToValidUTF8(string(content), "")), "\n")
		if first = strings.TrimSpace(first); first != "" {
			return v1alpha1.FitReason(prefix + ": " + first)
		}
		return prefix
	}
	reason := prefix + ": packages "
	for i, p := range pkgs {
		sep, tail := "", ""
		if i > 0 {
			sep = ", "
		}
		if rest := len(pkgs) - i - 1; rest > 0 {
			tail = fmt.Sprintf(" (+%d more)", rest)
		}
		if len(reason)+len(sep)+len(p)+len(tail) > v1alpha1.MaxReasonLength {
			return reason + fmt.Sprintf(" (+%d more)", len(pkgs)-i)
		}
		reason += sep + p
	}
	return reason
}

// Command is a sentinel command run on the host, such as needs-restarting
// -r: exit code 1 means the host needs a reboot, 0 that it does not. Any
// other outcome (another exit code, a command that cannot start, one killed
// or cut off by the timeout) is a Problem: the daemon asks for nothing on
// output it cannot vouch for.
type Command struct {
	// Argv is the command and its arguments, run without a shell.
	Argv []string
	// Timeout bounds each run.
	Timeout time.Duration
}

var _ Checker = Command{}

// Check runs the command once.
func (c Command) Check(ctx context.Context) Observation {
	ctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	res, err := run(ctx, c.Argv)
	return judgeCommand(c.Argv, res, err, ctx.Err() != nil)
}

// commandResult is what one run of the command gave.
type commandResult struct {
	exitCode       int
	stdout, stderr []byte
}

// judgeCommand turns a run of the command into an observation; timedOut is
// whether the run was cut off.
func judgeCommand(argv []string, res commandResult, err error, timedOut bool) Observation {
	name := strings.Join(argv, " ")
	switch {
	case timedOut:
		return Observation{Problem: fmt.Sprintf("sentinel command %q did not finish in time; not asking for a reboot", truncate(name, 128))}
	case err != nil:
		return Observation{Problem: fmt.Sprintf("sentinel command %q could not run: %v; not asking for a reboot", truncate(name, 128), err)}
	case res.exitCode == 0:
		return Observation{}
	case res.exitCode == 1:
		h := sha256.New()
		fmt.Fprintf(h, "command\x00%s\x00%d\x00%s", name, res.exitCode, res.stdout)
		reason := "the host needs a reboot (sentinel command " + name + " exited 1)"
		if out := strings.Join(strings.Fields(strings.ToValidUTF8(string(res.stdout), "")), " "); out != "" {
			reason += ": " + out
		}
		return Observation{Needed: true, Fingerprint: hex.EncodeToString(h.Sum(nil)), Reason: v1alpha1.FitReason(reason)}
	}
	msg := fmt.Sprintf("sentinel command %q exited %d, which says neither that a reboot is needed (1) nor that none is (0); not asking for a reboot", truncate(name, 128), res.exitCode)
	if e := strings.Join(strings.Fields(strings.ToValidUTF8(string(res.stderr), "")), " "); e != "" {
		msg += ": " + truncate(e, 256)
	}
	return Observation{Problem: msg}
}

// truncate shortens s for a message.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return v1alpha1.CutAt(s, n) + "…"
}
