package mutants

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// IndexFile is the index of the mutants, in this package's directory.
const IndexFile = "mutants.json"

// Dir is this package's directory, relative to the repository's root.
const Dir = "test/mutants"

// Index is IndexFile's content.
type Index struct {
	Mutants []Mutant `json:"mutants"`
}

// Mutant is one deliberate break.
type Mutant struct {
	// Name names the mutant; its patch is Name + ".patch".
	Name string `json:"name"`
	// Invariant is the number of the design's invariant it breaks.
	Invariant int `json:"invariant"`
	// Promise is the promise it breaks, in the invariant's words.
	Promise string `json:"promise"`
	// Breaks says what the patch does to the code.
	Breaks string `json:"breaks"`
	// Killers are the tests that run real parts and must catch it: at
	// least one of them fails with the patch applied.
	Killers []Tests `json:"killers"`
	// Unit are unit tests that catch it too, if any: they do not count
	// as its catching.
	Unit []Tests `json:"unit,omitempty"`
}

// Tests are tests of one package, run together with the same arguments.
type Tests struct {
	// Package is the package's path, relative to the root: ./operator/gate.
	Package string `json:"package"`
	// Tests name the package's test functions.
	Tests []string `json:"tests"`
	// Args are the test binary's flags (the soak's seed and duration).
	Args []string `json:"args,omitempty"`
	// Parts says which real parts the tests run: the API server, journald,
	// the soak, the real nodes. Empty for unit tests.
	Parts string `json:"parts,omitempty"`
}

// Soak reports whether the tests are the soak's, which `make mutants`
// leaves out with MUTANTS_SOAK=0.
func (t Tests) Soak() bool { return t.Package == "./test/soak" }

// Run is the -run pattern of exactly the tests.
func (t Tests) Run() string { return "^(" + strings.Join(t.Tests, "|") + ")$" }

// Load reads the index in dir and checks it: each mutant named once, with
// its patch, a killer that runs real parts, and tests named.
func Load(dir string) ([]Mutant, error) {
	data, err := os.ReadFile(filepath.Join(dir, IndexFile))
	if err != nil {
		return nil, err
	}
	var idx Index
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&idx); err != nil {
		return nil, fmt.Errorf("read %s: %w", IndexFile, err)
	}
	var errs []error
	seen := map[string]bool{}
	for _, m := range idx.Mutants {
		switch {
		case !regexp.MustCompile(`^[a-z0-9-]+$`).MatchString(m.Name):
			errs = append(errs, fmt.Errorf("mutant %q: a name is lowercase letters, digits and dashes", m.Name))
		case seen[m.Name]:
			errs = append(errs, fmt.Errorf("mutant %s: named twice", m.Name))
		}
		seen[m.Name] = true
		if _, err := os.Stat(filepath.Join(dir, m.Patch())); err != nil {
			errs = append(errs, fmt.Errorf("mutant %s: %w", m.Name, err))
		}
		if m.Invariant < 1 || m.Promise == "" || m.Breaks == "" {
			errs = append(errs, fmt.Errorf("mutant %s: says no invariant, promise or break", m.Name))
		}
		if len(m.Killers) == 0 {
			errs = append(errs, fmt.Errorf("mutant %s: names no test that runs real parts to catch it", m.Name))
		}
		for _, k := range m.Killers {
			if k.Parts == "" {
				errs = append(errs, fmt.Errorf("mutant %s: killer %s says no real parts it runs", m.Name, k.Package))
			}
		}
		for _, ts := range slices.Concat(m.Killers, m.Unit) {
			if !strings.HasPrefix(ts.Package, "./") || len(ts.Tests) == 0 {
				errs = append(errs, fmt.Errorf("mutant %s: tests of %q: a package is ./path and names its tests", m.Name, ts.Package))
			}
		}
	}
	patches, _ := filepath.Glob(filepath.Join(dir, "*.patch"))
	for _, p := range patches {
		if name := strings.TrimSuffix(filepath.Base(p), ".patch"); !seen[name] {
			errs = append(errs, fmt.Errorf("%s is in no mutant of %s", filepath.Base(p), IndexFile))
		}
	}
	return idx.Mutants, errors.Join(errs...)
}

// Patch is the mutant's patch file's name.
func (m Mutant) Patch() string { return m.Name + ".patch" }

// Touched returns the packages a patch changes, as ./path, in order.
func Touched(patch []byte) []string {
	var pkgs []string
	sc := bufio.NewScanner(bytes.NewReader(patch))
	for sc.Scan() {
		file, ok := strings.CutPrefix(sc.Text(), "+++ b/")
		if !ok {
			continue
		}
		if pkg := "./" + filepath.Dir(file); !slices.Contains(pkgs, pkg) {
			pkgs = append(pkgs, pkg)
		}
	}
	return pkgs
}

// CopyTree copies the checkout at root into dst: the files git tracks and
// those it does not ignore, as they are in the work tree (a change not
// committed yet is copied), so that a patch applied there never touches
// the checkout.
func CopyTree(root, dst string) error {
	out, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		return fmt.Errorf("list the checkout's files: %w", err)
	}
	for _, name := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		if name == "" {
			continue
		}
		if err := copyFile(filepath.Join(root, name), filepath.Join(dst, name)); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	info, err := os.Lstat(src)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil // deleted in the work tree, not yet in the index
	case err != nil:
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if info.Mode()&os.ModeSymlink != 0 {
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		return os.Symlink(target, dst)
	}
	if !info.Mode().IsRegular() {
		return nil // a submodule's directory
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, info.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// Apply applies the patch file to the tree at dir (reverse: takes it out
// again).
func Apply(dir, patch string, reverse bool) error {
	args := []string{"apply", "--whitespace=nowarn"}
	if reverse {
		args = append(args, "-R")
	}
	cmd := exec.Command("git", append(args, patch)...)
	cmd.Dir = dir
	// The scratch copy is no repository; git applies the patch as a plain
	// patch tool there.
	cmd.Env = append(os.Environ(), "GIT_CEILING_DIRECTORIES="+filepath.Dir(dir))
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git apply %s: %w: %s", filepath.Base(patch), err, out)
	}
	return nil
}

// GoEnv is the environment the go commands run in on a scratch copy:
// -trimpath, as make test builds, so that the packages a patch does not
// reach come from the machine's build cache.
func GoEnv() []string {
	env := os.Environ()
	flags := os.Getenv("GOFLAGS")
	if !slices.Contains(strings.Fields(flags), "-trimpath") {
		flags = strings.TrimSpace(flags + " -trimpath")
	}
	return append(env, "GOFLAGS="+flags, "GOWORK=off")
}

// TestFuncs returns the names of the test functions (TestX(t *testing.T))
// in the package's _test.go files.
func TestFuncs(pkgDir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(pkgDir, "*_test.go"))
	if err != nil {
		return nil, err
	}
	re := regexp.MustCompile(`(?m)^func (Test\w*)\(\w+ \*testing\.T\) \{`)
	var names []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		for _, m := range re.FindAllSubmatch(data, -1) {
			names = append(names, string(m[1]))
		}
	}
	return names, nil
}
