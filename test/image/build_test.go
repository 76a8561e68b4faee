package image

import (
	"debug/buildinfo"
	"debug/elf"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/kmaint/kmaint/test/testbed"
)

// buildLine is one `go build` of the Dockerfile's build stage.
var buildLine = regexp.MustCompile(`CGO_ENABLED=(\d) go build (-trimpath )?-ldflags "\$\{ldflags\}" -o /out/(\S+) (\S+);`)

// TestImageBinariesAreTheDockerfilesBuild reads the Go build record each
// binary carries and checks it against the Dockerfile's build commands and
// this tree: the Go version of the Dockerfile's GO_VERSION, the main module
// of go.mod, the package the command builds, the flags (-trimpath,
// CGO_ENABLED, and what -ldflags -s -w leaves out) and every dependency at
// go.sum's version and checksum. (The source of the main module itself is
// what hack/image-tar.sh's cache key covers.)
func TestImageBinariesAreTheDockerfilesBuild(t *testing.T) {
	b := build(t)
	g := NewWithT(t)
	repo := testbed.RepoRoot()
	var script string
	for _, run := range b.df.Stages[0].All("RUN") {
		if strings.Contains(run, "go build") {
			script = run
		}
	}
	g.Expect(script).NotTo(BeEmpty(), "no RUN with go build in the build stage")
	pkg := regexp.MustCompile(`pkg=(\S+);`).FindStringSubmatch(script)
	ldflags := regexp.MustCompile(`ldflags="([^"]+)";`).FindStringSubmatch(script)
	g.Expect(pkg).NotTo(BeNil())
	g.Expect(ldflags).NotTo(BeNil())
	wantLdflags := os.Expand(ldflags[1], func(k string) string {
		return map[string]string{"pkg": pkg[1], "VERSION": b.version, "COMMIT": b.commit}[k]
	})
	builds := buildLine.FindAllStringSubmatch(script, -1)
	g.Expect(builds).To(HaveLen(2))

	mod, err := os.ReadFile(filepath.Join(repo, "go.mod"))
	g.Expect(err).NotTo(HaveOccurred())
	module := regexp.MustCompile(`(?m)^module (\S+)$`).FindSubmatch(mod)
	g.Expect(module).NotTo(BeNil())
	sums := goSum(t, filepath.Join(repo, "go.sum"))

	for _, m := range builds {
		cgo, trimpath, binary, dir := m[1], m[2] != "", m[3], m[4]
		t.Run(binary, func(t *testing.T) {
			g := NewWithT(t)
			bi, err := buildinfo.ReadFile(b.path("/" + binary))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(bi.GoVersion).To(Equal("go" + b.df.Args["GO_VERSION"]))
			g.Expect(bi.Main.Path).To(Equal(string(module[1])))
			g.Expect(bi.Path).To(Equal(string(module[1]) + "/" + strings.TrimPrefix(dir, "./")))
			settings := map[string]string{}
			for _, s := range bi.Settings {
				settings[s.Key] = s.Value
			}
			g.Expect(settings).To(HaveKeyWithValue("CGO_ENABLED", cgo))
			// go build records no -ldflags with -trimpath: what they did is
			// checked instead. -X: the version and commit the binaries print
			// (TestImageIsTheDockerfiles); -s -w: no symbol table, no DWARF.
			if strings.Contains(wantLdflags, "-s -w") {
				g.Expect(sections(t, b.path("/"+binary))).NotTo(ContainElement(Or(Equal(".symtab"), HavePrefix(".debug_"), HavePrefix(".zdebug_"))))
			}
			g.Expect(settings).To(HaveKeyWithValue("GOOS", "linux"))
			g.Expect(settings).To(HaveKeyWithValue("GOARCH", "amd64"))
			if trimpath {
				g.Expect(settings).To(HaveKeyWithValue("-trimpath", "true"))
			}
			// No VCS stamp: the context has no .git (.dockerignore), so the
			// commit is the one the build was told.
			g.Expect(settings).NotTo(HaveKey("vcs.revision"))
			g.Expect(bi.Deps).NotTo(BeEmpty())
			for _, d := range bi.Deps {
				if d.Replace != nil {
					d = d.Replace
				}
				g.Expect(sums).To(HaveKeyWithValue(d.Path+" "+d.Version, d.Sum), "dependency %s %s", d.Path, d.Version)
			}
		})
	}
}

// sections lists an ELF file's section names.
func sections(t *testing.T, file string) []string {
	t.Helper()
	f, err := elf.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var names []string
	for _, s := range f.Sections {
		names = append(names, s.Name)
	}
	return names
}

// goSum reads go.sum's module checksums (not the go.mod ones), by "path
// version".
func goSum(t *testing.T, file string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && !strings.HasSuffix(f[1], "/go.mod") {
			out[f[0]+" "+f[1]] = f[2]
		}
	}
	return out
}
