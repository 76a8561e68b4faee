package helm

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// containerNamed returns the pod's container of that name, or nil.
func containerNamed(spec corev1.PodSpec, name string) *corev1.Container {
	i := slices.IndexFunc(spec.Containers, func(c corev1.Container) bool { return c.Name == name })
	if i < 0 {
		return nil
	}
	return &spec.Containers[i]
}

// hostPaths lists the host paths a container mounts.
func hostPaths(spec corev1.PodSpec, c *corev1.Container) []string {
	var paths []string
	for _, m := range c.VolumeMounts {
		for _, v := range spec.Volumes {
			if v.Name == m.Name && v.HostPath != nil {
				paths = append(paths, v.HostPath.Path)
			}
		}
	}
	return paths
}

// The reboot sentinel as daemon.sentinel configures it: a file read by a
// container of its own as nobody (the default), none, or a command run on
// the host, which alone makes the pod privileged.
func TestChartSentinel(t *testing.T) {
	for name, c := range map[string]struct {
		values string
		// wantDaemonArgs are the daemon's --sentinel-* flags.
		wantDaemonArgs []string
		// wantHostDir is the host directory the sentinel container mounts;
		// empty means no sentinel container.
		wantHostDir, wantFileArg string
		// wantPrivileged is whether the daemon runs privileged with the
		// host's PID namespace.
		wantPrivileged bool
	}{
		"default: Debian's file through the sentinel container": {
			wantDaemonArgs: []string{"--sentinel-report=/run/kmaint-sentinel/report.json", "--sentinel-interval=1m"},
			wantHostDir:    "/var/run", wantFileArg: "--file=/host/var/run/reboot-required",
		},
		"another file and interval": {
			values:         "daemon: {sentinel: {file: /run/kured/reboot-required, interval: 5m}}",
			wantDaemonArgs: []string{"--sentinel-report=/run/kmaint-sentinel/report.json", "--sentinel-interval=5m"},
			wantHostDir:    "/run/kured", wantFileArg: "--file=/host/run/kured/reboot-required",
		},
		"off": {values: `daemon: {sentinel: {file: ""}}`},
		"a command replaces the file": {
			values: `daemon: {sentinel: {command: [needs-restarting, "-r"], interval: 10m}}`,
			wantDaemonArgs: []string{"--sentinel-command=nsenter --target=1 --mount --uts --ipc --net --pid -- needs-restarting -r",
				"--sentinel-interval=10m"},
			wantPrivileged: true,
		},
	} {
		t.Run(name, func(t *testing.T) {
			spec := render(t, namespace, c.values).daemon().Spec.Template.Spec
			daemon := containerNamed(spec, "daemon")
			var got []string
			for _, a := range daemon.Args {
				if strings.HasPrefix(a, "--sentinel") {
					got = append(got, a)
				}
			}
			if !slices.Equal(got, c.wantDaemonArgs) {
				t.Errorf("daemon's sentinel flags %q, want %q", got, c.wantDaemonArgs)
			}
			if slices.ContainsFunc(hostPaths(spec, daemon), func(p string) bool { return p == "/run" || p == "/var/run" || p == c.wantHostDir }) {
				t.Errorf("the daemon, root, mounts the host's %v", hostPaths(spec, daemon))
			}
			privileged := ptr.Deref(daemon.SecurityContext.Privileged, false)
			if privileged != c.wantPrivileged || spec.HostPID != c.wantPrivileged {
				t.Errorf("daemon privileged %t, hostPID %t; want %t", privileged, spec.HostPID, c.wantPrivileged)
			}
			s := containerNamed(spec, "sentinel")
			if c.wantHostDir == "" {
				if s != nil {
					t.Errorf("a sentinel container: %+v", s)
				}
				if slices.ContainsFunc(spec.Volumes, func(v corev1.Volume) bool { return strings.HasPrefix(v.Name, "sentinel") }) {
					t.Errorf("sentinel volumes without a sentinel container: %v", spec.Volumes)
				}
				return
			}
			if s == nil {
				t.Fatal("no sentinel container")
			}
			if paths := hostPaths(spec, s); !slices.Equal(paths, []string{c.wantHostDir}) {
				t.Errorf("sentinel container mounts the host's %v, want %s only", paths, c.wantHostDir)
			}
			if !slices.Contains(s.Args, c.wantFileArg) {
				t.Errorf("sentinel container args %q lack %s", s.Args, c.wantFileArg)
			}
			if sc := s.SecurityContext; ptr.Deref(sc.RunAsUser, 0) != 65534 || ptr.Deref(sc.Privileged, true) || ptr.Deref(sc.AllowPrivilegeEscalation, true) {
				t.Errorf("sentinel container security context %+v, want nobody, unprivileged", sc)
			}
			for _, m := range s.VolumeMounts {
				if m.Name != "sentinel-report" && !m.ReadOnly {
					t.Errorf("sentinel container mount %s is writable", m.Name)
				}
			}
		})
	}
}

// A sentinel file that would mount the host's / or a relative path, or a
// command word the daemon would split, fails the render naming the value.
func TestChartSentinelRefused(t *testing.T) {
	for values, want := range map[string]string{
		`daemon: {sentinel: {file: /reboot-required}}`:            `daemon.sentinel.file is "/reboot-required": want an absolute path`,
		`daemon: {sentinel: {file: run/reboot-required}}`:         `daemon.sentinel.file is "run/reboot-required"`,
		`daemon: {sentinel: {file: /var/run/../reboot-required}}`: `daemon.sentinel.file is "/var/run/../reboot-required"`,
		`daemon: {sentinel: {command: ["needs-restarting -r"]}}`:  `daemon.sentinel.command holds "needs-restarting -r": each item one word`,
		`daemon: {sentinel: {command: [needs-restarting, ""]}}`:   `daemon.sentinel.command holds "": each item one word`,
	} {
		f := filepath.Join(t.TempDir(), "values.yaml")
		if err := os.WriteFile(f, []byte(values), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(filepath.Join(helmAssets(t), "helm"), "template", "kmaint", chartDir(), "--namespace", namespace, "--values", f).CombinedOutput()
		if err == nil || !strings.Contains(string(out), want) {
			t.Errorf("helm template with %s: %v\n%s", values, err, out)
		}
	}
}
