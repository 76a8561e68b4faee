package image

import (
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/kmaint/kmaint/test/testbed"
)

// imageName is the name hack/image-tar.sh gives the image.
const imageName = "localhost/kmaint:local"

// versionLine is what `kmaint-operator --version` and `kmaint-daemon
// version` print (internal/version's Info.String).
var versionLine = regexp.MustCompile(`^kmaint (\S+) \((\S+), (go\S+)\)\n$`)

// built is the image under test, unpacked, with what the Dockerfile says
// of it.
type built struct {
	archive *Archive
	root    string
	df      *Dockerfile
	// version, commit and goVersion are what the operator prints.
	version, commit, goVersion string
}

// requirePrivileges stops the test where the image cannot be built or
// unpacked: a skip on a developer's machine, a failure under CI, where
// `make test` runs as root after installing buildah and debootstrap.
func requirePrivileges(t *testing.T) {
	t.Helper()
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root (debootstrap, buildah, chroot, the image's file owners)")
	}
	for _, tool := range []string{"buildah", "debootstrap", "chroot"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool+" (hack/install-test-deps.sh installs it)")
		}
	}
	if len(missing) == 0 {
		return
	}
	msg := "building and checking kmaint's image needs " + strings.Join(missing, ", ")
	if os.Getenv("CI") != "" {
		t.Fatal(msg + "; CI must run this test: run make test as root")
	}
	t.Skip(msg + "; run make test as root (CI does)")
}

// build returns the image hack/image-tar.sh built (cached: at once unless
// the code or the Dockerfile changed), unpacked into a temporary directory.
func build(t *testing.T) *built {
	t.Helper()
	requirePrivileges(t)
	repo := testbed.RepoRoot()
	tarball := os.Getenv("KMAINT_IMAGE_TAR")
	if tarball == "" {
		var stderr bytes.Buffer
		cmd := exec.Command(filepath.Join(repo, "hack", "image-tar.sh"), filepath.Join(repo, "bin"))
		cmd.Dir, cmd.Stderr = repo, &stderr
		// An interrupted test takes the build with it (the script ends its
		// namespace when it dies).
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("hack/image-tar.sh: %v\n%s", err, tail(stderr.String(), 4000))
		}
		tarball = strings.TrimSpace(string(out))
	}
	df, err := ParseDockerfile(filepath.Join(repo, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := Open(tarball)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(tarball)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("image %s: %d MB, %d layers", tarball, fi.Size()>>20, len(a.layers))
	b := &built{archive: a, root: t.TempDir(), df: df}
	if err := a.Unpack(b.root); err != nil {
		t.Fatalf("unpack %s: %v", tarball, err)
	}
	m := versionLine.FindStringSubmatch(b.run(t, "65532:65532", "/kmaint-operator", "--version"))
	if m == nil {
		t.Fatal("kmaint-operator --version printed no version line")
	}
	b.version, b.commit, b.goVersion = m[1], m[2], m[3]
	return b
}

// run runs a command in the image's root, as the runtime would: chrooted,
// as user (uid:gid), with the image's environment. It fails the test when
// the command fails.
func (b *built) run(t *testing.T, user string, args ...string) string {
	t.Helper()
	out, err := b.command(user, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s in the image as %s: %v\n%s", strings.Join(args, " "), user, err, out)
	}
	return string(out)
}

func (b *built) command(user string, args ...string) *exec.Cmd {
	cmd := exec.Command("chroot", append([]string{"--userspec=" + user, b.root}, args...)...)
	cmd.Env = b.archive.Config.Config.Env
	cmd.Dir = "/"
	return cmd
}

func (b *built) path(p string) string { return filepath.Join(b.root, filepath.FromSlash(p)) }

func TestImageIsTheDockerfiles(t *testing.T) {
	b := build(t)
	final := b.df.Final()

	t.Run("configuration", func(t *testing.T) {
		g := NewWithT(t)
		cfg := b.archive.Config
		g.Expect(b.archive.RepoTags).To(ContainElement(imageName))
		g.Expect(cfg.OS + "/" + cfg.Architecture).To(Equal("linux/amd64"))
		users := final.All("USER")
		g.Expect(users).NotTo(BeEmpty())
		g.Expect(cfg.Config.User).To(Equal(users[len(users)-1]))
		g.Expect(cfg.Config.User).To(Equal("65532:65532"))
		entrypoints := final.All("ENTRYPOINT")
		g.Expect(entrypoints).NotTo(BeEmpty())
		want, err := Exec(entrypoints[len(entrypoints)-1])
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(cfg.Config.Entrypoint).To(Equal(want))
		g.Expect(cfg.Config.Entrypoint).To(Equal([]string{"/kmaint-operator"}))
		// The labels as the Dockerfile writes them, with the version and
		// commit the binaries were stamped with.
		labels, err := final.Labels(map[string]string{"VERSION": b.version, "COMMIT": b.commit})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(labels).To(HaveKey("org.opencontainers.image.revision"))
		for k, v := range labels {
			g.Expect(cfg.Config.Labels).To(HaveKeyWithValue(k, v))
		}
	})

	t.Run("binaries", func(t *testing.T) {
		g := NewWithT(t)
		// Stamped as make docker-build stamps them, by the Dockerfile's Go.
		g.Expect(b.commit).NotTo(Or(BeEmpty(), Equal("unknown")))
		g.Expect(b.version).NotTo(Equal("dev"))
		g.Expect(b.goVersion).To(Equal("go" + b.df.Args["GO_VERSION"]))
		daemon := b.run(t, "0:0", "/kmaint-daemon", "version")
		g.Expect(daemon).To(Equal("kmaint " + b.version + " (" + b.commit + ", " + b.goVersion + ")\n"))
		// The COPY from the build stage: each binary at /, root's, executable.
		copies := slices.DeleteFunc(final.All("COPY"), func(c string) bool { return !strings.HasPrefix(c, "--from=build ") })
		g.Expect(copies).To(HaveLen(1))
		f := strings.Fields(strings.TrimPrefix(copies[0], "--from=build "))
		g.Expect(f[len(f)-1]).To(Equal("/"))
		g.Expect(f[:len(f)-1]).To(ConsistOf("/out/kmaint-operator", "/out/kmaint-daemon"))
		for _, src := range f[:len(f)-1] {
			fi, err := os.Stat(b.path("/" + filepath.Base(src)))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(fi.Mode().IsRegular()).To(BeTrue())
			g.Expect(fi.Mode().Perm() & 0o111).To(Equal(os.FileMode(0o111)))
		}
	})

	t.Run("libraries", func(t *testing.T) {
		g := NewWithT(t)
		// The operator is static (CGO_ENABLED=0): no program interpreter.
		g.Expect(interpreter(t, b.path("/kmaint-operator"))).To(BeEmpty())
		// The daemon is linked against glibc, and dlopens libsystemd.so.0
		// (go-systemd's sdjournal): the image's loader must find all of
		// both, in the image alone.
		ld := interpreter(t, b.path("/kmaint-daemon"))
		g.Expect(ld).NotTo(BeEmpty())
		for _, bin := range []string{"/kmaint-daemon", "libsystemd.so.0"} {
			target := bin
			if !strings.HasPrefix(bin, "/") {
				target = findLibrary(t, b, bin)
			}
			out := b.run(t, "0:0", ld, "--list", target)
			g.Expect(out).NotTo(ContainSubstring("not found"), "%s in the image: %s", bin, out)
			g.Expect(out).To(ContainSubstring("libc.so.6"))
		}
		// And it does load: cancel-reboot without an id reads the journal
		// through libsystemd (empty here) before it refuses, listing this
		// boot's requests.
		bootID := filepath.Join("/tmp", "test-boot-id")
		g.Expect(os.WriteFile(b.path(bootID), []byte("6b0c1d0a-4f3e-4c1e-9a53-0e8f2b7d9c11\n"), 0o644)).To(Succeed())
		out, err := b.command("0:0", "/kmaint-daemon", "cancel-reboot", "--boot-id-file="+bootID).CombinedOutput()
		g.Expect(err).To(HaveOccurred())
		g.Expect(string(out)).To(ContainSubstring("no request id given"))
		g.Expect(string(out)).NotTo(Or(ContainSubstring("open the journal"), ContainSubstring("libsystemd")))
	})

	t.Run("base and packages", func(t *testing.T) {
		g := NewWithT(t)
		osRelease, err := os.ReadFile(b.path("/etc/os-release"))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(string(osRelease)).To(ContainSubstring("VERSION_CODENAME=bookworm"))
		g.Expect(final.From).To(Equal("debian:bookworm-slim"))
		// What the apt-get line installs is installed, and its lists are
		// gone.
		status, err := os.ReadFile(b.path("/var/lib/dpkg/status"))
		g.Expect(err).NotTo(HaveOccurred())
		pkgs := aptInstalls(final)
		g.Expect(pkgs).To(ConsistOf("libsystemd0", "ca-certificates"))
		for _, p := range pkgs {
			g.Expect(string(status)).To(MatchRegexp(`(?m)^Package: `+regexp.QuoteMeta(p)+`\nStatus: install ok installed$`), "package %s", p)
		}
		lists, err := os.ReadDir(b.path("/var/lib/apt/lists"))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(lists).To(BeEmpty())
		certs, err := os.ReadFile(b.path("/etc/ssl/certs/ca-certificates.crt"))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(strings.Count(string(certs), "BEGIN CERTIFICATE")).To(BeNumerically(">", 100))
		// -slim: no manual pages, and of the docs only the copyrights.
		man, _ := os.ReadDir(b.path("/usr/share/man"))
		g.Expect(man).To(BeEmpty())
		g.Expect(filepath.WalkDir(b.path("/usr/share/doc"), func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && d.Name() != "copyright" {
				t.Errorf("%s in a -slim image", strings.TrimPrefix(p, b.root))
			}
			return err
		})).To(Succeed())
	})

	t.Run("history", func(t *testing.T) {
		g := NewWithT(t)
		// Each RUN of the final stage made a step of the image's history,
		// in order, after the base's.
		var steps []string
		for _, h := range b.archive.Config.History {
			steps = append(steps, strings.Join(strings.Fields(h.CreatedBy), " "))
		}
		at := 0
		for _, run := range final.All("RUN") {
			want := strings.Join(strings.Fields(run), " ")
			i := slices.IndexFunc(steps[at:], func(s string) bool { return strings.Contains(s, want) })
			g.Expect(i).To(BeNumerically(">=", 0), "RUN %s not in the history after step %d: %q", want, at, steps)
			at += i + 1
		}
	})
}

// interpreter returns an ELF file's program interpreter, "" for a static
// binary.
func interpreter(t *testing.T, file string) string {
	t.Helper()
	f, err := elf.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b := make([]byte, p.Filesz)
			if _, err := p.ReadAt(b, 0); err != nil {
				t.Fatal(err)
			}
			return strings.TrimRight(string(b), "\x00")
		}
	}
	return ""
}

// findLibrary returns where in the image the loader finds a library, as
// ldconfig's cache lists it.
func findLibrary(t *testing.T, b *built, name string) string {
	t.Helper()
	out := b.run(t, "0:0", "/sbin/ldconfig", "-p")
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && f[0] == name {
			return f[len(f)-1]
		}
	}
	t.Fatalf("%s is not in the image's loader cache:\n%s", name, out)
	return ""
}

// aptInstalls returns the packages the stage's RUN lines install with
// apt-get install.
func aptInstalls(s Stage) []string {
	var out []string
	for _, run := range s.All("RUN") {
		for _, part := range strings.Split(run, "&&") {
			f := strings.Fields(part)
			if len(f) < 2 || f[0] != "apt-get" || f[1] != "install" {
				continue
			}
			for _, w := range f[2:] {
				if !strings.HasPrefix(w, "-") {
					out = append(out, w)
				}
			}
		}
	}
	return out
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
