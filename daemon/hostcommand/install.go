package hostcommand

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Name is the file the command gets in the directory: what root types.
const Name = "kmaint-daemon"

// mode lets everyone run it, as any command in /usr/local/bin: anyone may
// run it, yet only root's requests count (the daemon trusts only entries
// journaled by uid 0) and a non-root run is refused before it writes.
const mode fs.FileMode = 0o755

// Install copies the executable src to dir/kmaint-daemon and tells whether
// it changed anything. The copy appears whole or not at all: it is written
// beside the target and renamed over it, so a person running the old
// command meanwhile keeps the old file, and an install killed halfway
// leaves the old command in place (and at most a temporary file, which the
// next install removes). An identical file is left alone, so that the
// daemon's every restart does not rewrite the host.
func Install(src, dir string) (bool, error) {
	want, err := os.ReadFile(src)
	if err != nil {
		return false, fmt.Errorf("read this command: %w", err)
	}
	st, err := os.Stat(dir)
	if err != nil {
		return false, fmt.Errorf("the host directory: %w", err)
	}
	if !st.IsDir() {
		return false, fmt.Errorf("the host directory %s is not a directory", dir)
	}
	if err := checkOwnership(dir, st); err != nil {
		return false, err
	}
	if err := checkAncestors(dir); err != nil {
		return false, err
	}
	target := filepath.Join(dir, Name)
	if err := removeLeftovers(dir); err != nil {
		return false, err
	}
	if same, err := sameFile(target, want); err != nil {
		return false, err
	} else if same {
		return false, nil
	}
	tmp, err := os.CreateTemp(dir, tempPrefix+"*")
	if err != nil {
		return false, fmt.Errorf("write %s: %w", dir, err)
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	if _, err := tmp.Write(want); err != nil {
		tmp.Close()
		return false, fmt.Errorf("write %s: %w", tmp.Name(), err)
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return false, fmt.Errorf("chmod %s: %w", tmp.Name(), err)
	}
	// On disk before the rename, so that a node crashing right after it
	// finds the whole command, not an empty file under its name.
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return false, fmt.Errorf("sync %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return false, fmt.Errorf("write %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), target); err != nil {
		return false, fmt.Errorf("install %s: %w", target, err)
	}
	return true, nil
}

// tempPrefix names the copies in progress.
const tempPrefix = "." + Name + ".new-"

// sameFile tells whether path is a regular, executable file holding want.
func sameFile(path string, want []byte) (bool, error) {
	st, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("look at %s: %w", path, err)
	}
	if !st.Mode().IsRegular() || st.Mode().Perm() != mode || st.Size() != int64(len(want)) {
		return false, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return false, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	have, err := io.ReadAll(f)
	if err != nil {
		return false, fmt.Errorf("read %s: %w", path, err)
	}
	return bytes.Equal(have, want), nil
}

// removeLeftovers removes the temporary files of installs that were killed.
func removeLeftovers(dir string) error {
	old, err := filepath.Glob(filepath.Join(dir, tempPrefix+"*"))
	if err != nil {
		return err
	}
	for _, p := range old {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove a killed install's %s: %w", p, err)
		}
	}
	return nil
}

// checkOwnership refuses a directory that someone else could write to, as
// sshd refuses a loose home directory: root runs the command from there, so
// whoever can replace files in it could have root run anything.
func checkOwnership(dir string, st fs.FileInfo) error {
	if st.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("the host directory %s is writable by group or others (%v): whoever can write there could replace the command root runs; use a directory of its own, such as /opt/kmaint/bin", dir, st.Mode().Perm())
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != os.Geteuid() {
		return fmt.Errorf("the host directory %s belongs to uid %d, not to this installer's (%d): its owner could replace the command root runs", dir, sys.Uid, os.Geteuid())
	}
	return nil
}

// checkAncestors refuses a directory whose parents someone else could
// change: whoever may write /opt/kmaint could rename bin away and put a
// directory of their own in its place, and root would run what is in it.
// A parent writable by others passes only with the sticky bit (as /tmp),
// which keeps them from renaming an entry that is not theirs. The chart
// mounts the host's parents read-only at their own paths, so that this
// sees the host's and not the image's; / is the image's, and not looked at.
func checkAncestors(dir string) error {
	for p := filepath.Dir(filepath.Clean(dir)); p != "/" && p != "."; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("look at %s, a parent of the host directory: %w", p, err)
		}
		if st.Mode().Perm()&0o022 != 0 && st.Mode()&fs.ModeSticky == 0 {
			return fmt.Errorf("%s, a parent of the host directory %s, is writable by group or others (%v): whoever can write there could put another directory in its place and have root run what is in it; use a path whose every directory is root's", p, dir, st.Mode().Perm())
		}
		if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != os.Geteuid() {
			return fmt.Errorf("%s, a parent of the host directory %s, belongs to uid %d, not to this installer's (%d): its owner could put another directory in its place", p, dir, sys.Uid, os.Geteuid())
		}
	}
	return nil
}
