package buildcache

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/kmaint/kmaint/test/testbed"
)

// driver sources hack/cache.sh and builds one entry of kind "thing" under
// the key given as $1, with a builder that counts its runs in $COUNT, writes
// two files and a link, and then does what $BUILDER_THEN says.
const driver = `set -euo pipefail
source "$CACHE_SH"
make_thing() {
	echo run >>"$COUNT"
	mkdir "$1/sub"
	echo "made for $KEY" >"$1/sub/file"
	printf 'x' >"$1/top"
	ln -s sub/file "$1/link"
	eval "${BUILDER_THEN:-}"
}
cache_init
KEY="$1"
dir="$(cache_build thing "$1" "${KEEP:-3}" make_thing)"
cache_link "$BIN/thing/current" "$dir"
echo "$dir"
`

type cache struct {
	t     *testing.T
	root  string // $KMAINT_CACHE
	count string // the builder's run count
	bin   string // a checkout's bin/
}

func newCache(t *testing.T) *cache {
	dir := t.TempDir()
	return &cache{t: t, root: filepath.Join(dir, "cache"), count: filepath.Join(dir, "count"), bin: filepath.Join(dir, "bin")}
}

// build runs the driver for key, with extra environment, and returns its
// stdout, stderr and error.
func (c *cache) build(key string, env ...string) (string, string, error) {
	script := filepath.Join(c.t.TempDir(), "driver.sh")
	if err := os.WriteFile(script, []byte(driver), 0o755); err != nil {
		c.t.Fatal(err)
	}
	cmd := exec.Command("bash", script, key)
	cmd.Env = append(os.Environ(), "KMAINT_CACHE="+c.root, "COUNT="+c.count, "BIN="+c.bin,
		"CACHE_SH="+filepath.Join(testbed.RepoRoot(), "hack", "cache.sh"))
	cmd.Env = append(cmd.Env, env...)
	// A group of its own: a builder that kills its group (kill 0) kills
	// the build, not the test.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return strings.TrimSpace(stdout.String()), stderr.String(), err
}

// mustBuild builds key and returns the entry's directory.
func (c *cache) mustBuild(key string, env ...string) string {
	c.t.Helper()
	out, stderr, err := c.build(key, env...)
	if err != nil {
		c.t.Fatalf("build %s: %v\n%s", key, err, stderr)
	}
	return out
}

// runs is how often the builder ran.
func (c *cache) runs() int {
	b, err := os.ReadFile(c.count)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		c.t.Fatal(err)
	}
	return strings.Count(string(b), "run\n")
}

func (c *cache) entry(key string) string { return filepath.Join(c.root, "v1", "thing", key) }

func TestAnEntryIsBuiltOnceAndUsedByEveryCheckout(t *testing.T) {
	g := NewWithT(t)
	c := newCache(t)
	dir := c.mustBuild("k1")
	g.Expect(dir).To(Equal(c.entry("k1")))
	g.Expect(os.ReadFile(filepath.Join(dir, "sub", "file"))).To(Equal([]byte("made for k1\n")))
	g.Expect(c.runs()).To(Equal(1))

	// Another checkout: a bin/ of its own, the same machine's cache.
	other := *c
	other.bin = filepath.Join(t.TempDir(), "bin")
	g.Expect(other.mustBuild("k1")).To(Equal(dir))
	g.Expect(c.runs()).To(Equal(1), "the second checkout used the entry")
	g.Expect(os.Readlink(filepath.Join(other.bin, "thing", "current"))).To(Equal(dir))

	g.Expect(c.mustBuild("k2")).To(Equal(c.entry("k2")))
	g.Expect(c.runs()).To(Equal(2), "another key is another build")
	g.Expect(os.Stat(filepath.Join(c.root, "v1"))).To(WithTransform(os.FileInfo.Mode, Equal(os.ModeDir|0o700)),
		"nobody else may write what the tests run as root")
}

// TestAnEntryChangedAfterItWasWrittenIsBuiltAgain changes an entry in each
// way a disk, a person or another program could, and checks that the next
// read says what differs, builds the entry again and never hands out the
// changed one.
func TestAnEntryChangedAfterItWasWrittenIsBuiltAgain(t *testing.T) {
	changes := map[string]func(t *testing.T, dir string){
		"a file's content": func(t *testing.T, dir string) {
			must(t, os.WriteFile(filepath.Join(dir, "sub", "file"), []byte("made for k9\n"), 0o644))
		},
		"a file truncated": func(t *testing.T, dir string) { must(t, os.Truncate(filepath.Join(dir, "top"), 0)) },
		"a file added":     func(t *testing.T, dir string) { must(t, os.WriteFile(filepath.Join(dir, "sub", "extra"), nil, 0o644)) },
		"a file removed":   func(t *testing.T, dir string) { must(t, os.Remove(filepath.Join(dir, "top"))) },
		"a file's mode":    func(t *testing.T, dir string) { must(t, os.Chmod(filepath.Join(dir, "top"), 0o4755)) },
		"a link's target": func(t *testing.T, dir string) {
			must(t, os.Remove(filepath.Join(dir, "link")))
			must(t, os.Symlink("/etc/passwd", filepath.Join(dir, "link")))
		},
		"the record removed": func(t *testing.T, dir string) { must(t, os.Remove(filepath.Join(dir, ".kmaint-cache"))) },
		"the record rewritten to match": func(t *testing.T, dir string) {
			// Someone who changes a file and writes a record to match still
			// cannot make another key's entry, nor one from nothing.
			must(t, os.WriteFile(filepath.Join(dir, ".kmaint-cache"), []byte("kmaint-cache 1 thing other\n"), 0o644))
		},
		"the entry writable by others": func(t *testing.T, dir string) { must(t, os.Chmod(dir, 0o777)) },
	}
	for name, change := range changes {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			c := newCache(t)
			dir := c.mustBuild("k1")
			change(t, dir)
			out, stderr, err := c.build("k1")
			g.Expect(err).NotTo(HaveOccurred(), stderr)
			g.Expect(out).To(Equal(dir))
			g.Expect(c.runs()).To(Equal(2), "built again")
			g.Expect(stderr).To(ContainSubstring("cache: thing/k1"), "says what is wrong with the entry")
			g.Expect(stderr).To(ContainSubstring("removing " + dir))
			g.Expect(os.ReadFile(filepath.Join(dir, "sub", "file"))).To(Equal([]byte("made for k1\n")))
			g.Expect(os.ReadFile(filepath.Join(dir, "top"))).To(Equal([]byte("x")))
			g.Expect(os.Readlink(filepath.Join(dir, "link"))).To(Equal("sub/file"))
			_, err = os.Stat(filepath.Join(dir, "sub", "extra"))
			g.Expect(os.IsNotExist(err)).To(BeTrue(), "nothing of the changed entry is kept")

			_, _, err = c.build("k1")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(c.runs()).To(Equal(2), "the rebuilt entry is used")
		})
	}
}

// TestAnEntryOfAnotherKeyOrUserIsNotUsed plants entries that were never
// written for their key: another key's entry copied in, a link to elsewhere,
// and (as root) an entry of another user.
func TestAnEntryOfAnotherKeyOrUserIsNotUsed(t *testing.T) {
	t.Run("another key's entry", func(t *testing.T) {
		g := NewWithT(t)
		c := newCache(t)
		dir := c.mustBuild("k1")
		g.Expect(exec.Command("cp", "-a", dir, c.entry("k2")).Run()).To(Succeed())
		_, stderr, err := c.build("k2")
		g.Expect(err).NotTo(HaveOccurred(), stderr)
		g.Expect(stderr).To(ContainSubstring("its record is of another entry"))
		g.Expect(c.runs()).To(Equal(2))
		g.Expect(os.ReadFile(filepath.Join(c.entry("k2"), "sub", "file"))).To(Equal([]byte("made for k2\n")))
	})
	t.Run("a link in place of the entry", func(t *testing.T) {
		g := NewWithT(t)
		c := newCache(t)
		elsewhere := c.mustBuild("k1")
		must(t, os.Symlink(elsewhere, c.entry("k2")))
		out, stderr, err := c.build("k2")
		g.Expect(err).NotTo(HaveOccurred(), stderr)
		g.Expect(out).To(Equal(c.entry("k2")))
		g.Expect(os.Lstat(out)).To(WithTransform(os.FileInfo.IsDir, BeTrue()), "a directory of its own, not the link")
		g.Expect(os.ReadFile(filepath.Join(elsewhere, "sub", "file"))).To(Equal([]byte("made for k1\n")), "the link's target is left alone")
		g.Expect(c.runs()).To(Equal(2))
	})
	t.Run("an entry of another user", func(t *testing.T) {
		requireRoot(t)
		g := NewWithT(t)
		c := newCache(t)
		dir := c.mustBuild("k1")
		must(t, os.Chown(dir, 1000, 1000))
		_, stderr, err := c.build("k1")
		g.Expect(err).NotTo(HaveOccurred(), stderr)
		g.Expect(stderr).To(ContainSubstring("belongs to another user"))
		g.Expect(c.runs()).To(Equal(2))
		g.Expect(os.Stat(dir)).To(WithTransform(func(fi os.FileInfo) uint32 { return fi.Sys().(*syscall.Stat_t).Uid }, BeZero()))
	})
	t.Run("a cache of another user", func(t *testing.T) {
		requireRoot(t)
		g := NewWithT(t)
		c := newCache(t)
		c.mustBuild("k1")
		must(t, os.Chown(c.root, 1000, 1000))
		_, stderr, err := c.build("k1")
		g.Expect(err).To(HaveOccurred(), "a cache someone else controls is not used, nor built into")
		g.Expect(stderr).To(ContainSubstring("belongs to another user; set KMAINT_CACHE"))
	})
}

// TestAKilledBuildLeavesNoEntry kills the build (the script and its
// builder, SIGKILL) at a moment while the builder writes, and checks that no
// entry appears, that the next build makes a whole one, and that the killed
// build's leftovers are gone.
func TestAKilledBuildLeavesNoEntry(t *testing.T) {
	g := NewWithT(t)
	c := newCache(t)
	// The builder has written its files; the kill lands before the entry is
	// recorded and renamed into place.
	_, _, err := c.build("k1", `BUILDER_THEN=kill -KILL 0`)
	g.Expect(err).To(HaveOccurred())
	var exit *exec.ExitError
	g.Expect(err).To(BeAssignableToTypeOf(exit))
	_, err = os.Stat(c.entry("k1"))
	g.Expect(os.IsNotExist(err)).To(BeTrue(), "no entry from a killed build")
	left, _ := filepath.Glob(filepath.Join(c.root, "v1", "thing", ".tmp.*"))
	g.Expect(left).NotTo(BeEmpty(), "the killed build's scratch is there to be removed")

	dir := c.mustBuild("k1")
	g.Expect(os.ReadFile(filepath.Join(dir, "sub", "file"))).To(Equal([]byte("made for k1\n")))
	left, _ = filepath.Glob(filepath.Join(c.root, "v1", "thing", ".tmp.*"))
	g.Expect(left).To(BeEmpty(), "the next build removed it")
	g.Expect(c.runs()).To(Equal(2))
}

func TestAFailedBuildLeavesNoEntry(t *testing.T) {
	g := NewWithT(t)
	c := newCache(t)
	_, stderr, err := c.build("k1", `BUILDER_THEN=false; echo never`)
	g.Expect(err).To(HaveOccurred())
	g.Expect(stderr).To(ContainSubstring("building thing/k1 failed"))
	g.Expect(stderr).NotTo(ContainSubstring("never"), "the builder stops at its first failing command")
	_, err = os.Stat(c.entry("k1"))
	g.Expect(os.IsNotExist(err)).To(BeTrue())
	left, _ := filepath.Glob(filepath.Join(c.root, "v1", "thing", ".tmp.*"))
	g.Expect(left).To(BeEmpty())
}

// TestBuildsOfOneEntryAtOnceBuildItOnce starts four builds of one key
// together (four checkouts' make test): one builds, the others wait and use
// its entry.
func TestBuildsOfOneEntryAtOnceBuildItOnce(t *testing.T) {
	g := NewWithT(t)
	c := newCache(t)
	var wg sync.WaitGroup
	outs := make([]string, 4)
	errs := make([]error, 4)
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var stderr string
			// A slow builder, so that the others start while it builds.
			outs[i], stderr, errs[i] = c.build("k1", "BUILDER_THEN=sleep 1")
			if errs[i] != nil {
				errs[i] = fmt.Errorf("%w: %s", errs[i], stderr)
			}
		}()
	}
	wg.Wait()
	for i := range outs {
		g.Expect(errs[i]).NotTo(HaveOccurred())
		g.Expect(outs[i]).To(Equal(c.entry("k1")))
	}
	g.Expect(c.runs()).To(Equal(1))
}

// TestTheLeastRecentlyUsedEntriesGo keeps two entries: a third removes the
// one used least recently, not the one built first.
func TestTheLeastRecentlyUsedEntriesGo(t *testing.T) {
	g := NewWithT(t)
	c := newCache(t)
	c.mustBuild("k1", "KEEP=2")
	c.mustBuild("k2", "KEEP=2")
	c.mustBuild("k1", "KEEP=2") // used again
	c.mustBuild("k3", "KEEP=2")
	g.Expect(c.runs()).To(Equal(3))
	_, err := os.Stat(c.entry("k2"))
	g.Expect(os.IsNotExist(err)).To(BeTrue(), "k2 was used least recently")
	g.Expect(c.entry("k1")).To(BeADirectory())
	g.Expect(c.entry("k3")).To(BeADirectory())
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatal("this test needs root; CI runs make test as root")
	}
	t.Skip("needs root (to own files as another user); CI runs it")
}
