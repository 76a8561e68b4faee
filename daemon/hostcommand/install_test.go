package hostcommand

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func install(t *testing.T, src, dir string) bool {
	t.Helper()
	changed, err := Install(src, dir)
	if err != nil {
		t.Fatalf("Install: %v", err)
	}
	return changed
}

func TestInstallCopiesOnceAndReplacesWhenChanged(t *testing.T) {
	src := filepath.Join(t.TempDir(), "kmaint-daemon")
	writeFile(t, src, "v1", 0o700)
	dir := t.TempDir()
	target := filepath.Join(dir, Name)

	if !install(t, src, dir) {
		t.Fatal("the first install changed nothing")
	}
	st, err := os.Stat(target)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o755 || readFile(t, target) != "v1" {
		t.Fatalf("installed %v %q, want -rwxr-xr-x v1", st.Mode(), readFile(t, target))
	}

	if install(t, src, dir) {
		t.Fatal("an install of the same command rewrote it")
	}
	if again, err := os.Stat(target); err != nil || !os.SameFile(st, again) {
		t.Fatal("an install of the same command replaced the file")
	}

	writeFile(t, src, "v2, longer", 0o700)
	if !install(t, src, dir) || readFile(t, target) != "v2, longer" {
		t.Fatalf("an upgraded command was not installed: %q", readFile(t, target))
	}
	// A mode changed by hand is put back, content equal or not.
	if err := os.Chmod(target, 0o777); err != nil {
		t.Fatal(err)
	}
	if !install(t, src, dir) {
		t.Fatal("a world-writable command was left as it was")
	}
	if st, _ := os.Stat(target); st.Mode().Perm() != 0o755 {
		t.Fatalf("mode %v after reinstall", st.Mode())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("the directory holds %d files, want only %s", len(entries), Name)
	}
}

// A link planted under the command's name is replaced, and what it points
// to is not written through it.
func TestInstallReplacesALinkWithoutFollowingIt(t *testing.T) {
	src := filepath.Join(t.TempDir(), "kmaint-daemon")
	writeFile(t, src, "command", 0o755)
	victim := filepath.Join(t.TempDir(), "shadow")
	writeFile(t, victim, "untouched", 0o644)
	dir := t.TempDir()
	if err := os.Symlink(victim, filepath.Join(dir, Name)); err != nil {
		t.Fatal(err)
	}
	install(t, src, dir)
	if got := readFile(t, victim); got != "untouched" {
		t.Fatalf("the link's target was written: %q", got)
	}
	st, err := os.Lstat(filepath.Join(dir, Name))
	if err != nil || !st.Mode().IsRegular() {
		t.Fatalf("the command is %v (%v), want a regular file", st, err)
	}
}

func TestInstallRemovesAKilledInstallsLeftovers(t *testing.T) {
	src := filepath.Join(t.TempDir(), "kmaint-daemon")
	writeFile(t, src, "command", 0o755)
	dir := t.TempDir()
	leftover := filepath.Join(dir, tempPrefix+"123")
	writeFile(t, leftover, "half", 0o600)
	install(t, src, dir)
	if _, err := os.Stat(leftover); !os.IsNotExist(err) {
		t.Fatalf("the leftover is still there: %v", err)
	}
}

func TestInstallRefusesWhatIsNotADirectory(t *testing.T) {
	src := filepath.Join(t.TempDir(), "kmaint-daemon")
	writeFile(t, src, "command", 0o755)
	file := filepath.Join(t.TempDir(), "file")
	writeFile(t, file, "", 0o644)
	for name, dir := range map[string]string{
		"missing":  filepath.Join(t.TempDir(), "nope"),
		"a file":   file,
		"no input": "",
	} {
		if _, err := Install(src, dir); err == nil {
			t.Errorf("%s: Install(%q) succeeded", name, dir)
		}
	}
	if _, err := Install(filepath.Join(t.TempDir(), "missing"), t.TempDir()); err == nil {
		t.Error("Install of a missing command succeeded")
	}
}

// A directory others may write to, or that another user owns, is refused:
// root would run whatever they put there under the command's name.
func TestInstallRefusesADirectoryOthersCanWrite(t *testing.T) {
	src := filepath.Join(t.TempDir(), "kmaint-daemon")
	writeFile(t, src, "command", 0o755)
	for _, mode := range []os.FileMode{0o777, 0o775, 0o757, 0o1777} {
		dir := t.TempDir()
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		_, err := Install(src, dir)
		if err == nil || !strings.Contains(err.Error(), "writable by group or others") {
			t.Errorf("Install into a directory of mode %v: %v, want refused", mode, err)
		}
		if _, statErr := os.Stat(filepath.Join(dir, Name)); !os.IsNotExist(statErr) {
			t.Errorf("mode %v: the command was written anyway", mode)
		}
	}
	if os.Geteuid() != 0 {
		return // only root can give a directory to another user
	}
	dir := t.TempDir()
	if err := os.Chown(dir, 1000, 1000); err != nil {
		t.Fatal(err)
	}
	if _, err := Install(src, dir); err == nil || !strings.Contains(err.Error(), "belongs to uid 1000") {
		t.Errorf("Install into a directory of uid 1000: %v, want refused", err)
	}
}

// A directory whose parent someone else may write to, or owns, is refused
// too: they could rename the directory away and put their own in its
// place. A parent with the sticky bit (as /tmp) keeps them from renaming
// what is not theirs, and passes.
func TestInstallRefusesADirectoryWhoseParentOthersCanChange(t *testing.T) {
	src := filepath.Join(t.TempDir(), "kmaint-daemon")
	writeFile(t, src, "command", 0o755)
	nested := func(parentMode os.FileMode) (parent, dir string) {
		parent = filepath.Join(t.TempDir(), "opt")
		dir = filepath.Join(parent, "kmaint", "bin")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(parent, parentMode); err != nil {
			t.Fatal(err)
		}
		return parent, dir
	}
	for _, mode := range []os.FileMode{0o777, 0o775} {
		parent, dir := nested(mode)
		_, err := Install(src, dir)
		if err == nil || !strings.Contains(err.Error(), parent+", a parent of the host directory") {
			t.Errorf("Install under a parent of mode %v: %v, want refused naming %s", mode, err, parent)
		}
		if _, statErr := os.Stat(filepath.Join(dir, Name)); !os.IsNotExist(statErr) {
			t.Errorf("parent mode %v: the command was written anyway", mode)
		}
	}
	_, dir := nested(0o755 | os.ModeSticky | 0o022)
	if _, err := Install(src, dir); err != nil {
		t.Errorf("Install under a sticky parent writable by all, as /tmp: %v", err)
	}
	if os.Geteuid() != 0 {
		return
	}
	parent, dir := nested(0o755)
	if err := os.Chown(parent, 1000, 1000); err != nil {
		t.Fatal(err)
	}
	if _, err := Install(src, dir); err == nil || !strings.Contains(err.Error(), "belongs to uid 1000") {
		t.Errorf("Install under a parent of uid 1000: %v, want refused", err)
	}
}
