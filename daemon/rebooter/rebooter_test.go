package rebooter

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	. "github.com/onsi/gomega"
)

const dbusDaemon = "/usr/bin/dbus-daemon"

// startBus starts a private bus and returns its address. The bus stops when
// the test ends.
func startBus(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(dbusDaemon); err != nil {
		t.Fatalf("%s is needed to test the logind rebooter: install the Debian package dbus (make test installs test dependencies): %v", dbusDaemon, err)
	}
	cmd := exec.Command(dbusDaemon, "--session", "--nofork", "--print-address=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", dbusDaemon, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	// The bus prints its address once it listens: that line is the
	// readiness signal.
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("read the bus address from %s: %v; stderr: %s", dbusDaemon, err, stderr.String())
	}
	return strings.TrimSpace(line)
}

// fakeLogind is org.freedesktop.login1.Manager's Reboot, recording calls.
type fakeLogind struct {
	// err, when set, is what Reboot answers.
	err *dbus.Error

	mu    sync.Mutex
	calls []bool
}

// Reboot is called over D-Bus.
func (f *fakeLogind) Reboot(interactive bool) *dbus.Error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, interactive)
	return f.err
}

func (f *fakeLogind) interactiveArgs() []bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]bool(nil), f.calls...)
}

// serveLogind claims logind's name on the bus and exports f where logind's
// manager lives.
func serveLogind(t *testing.T, addr string, f *fakeLogind) {
	t.Helper()
	conn, err := dbus.Connect(addr)
	if err != nil {
		t.Fatalf("connect to the private bus: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if err := conn.Export(f, "/org/freedesktop/login1", "org.freedesktop.login1.Manager"); err != nil {
		t.Fatalf("export the fake logind: %v", err)
	}
	reply, err := conn.RequestName("org.freedesktop.login1", dbus.NameFlagDoNotQueue)
	if err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("claim org.freedesktop.login1: reply %v, %v", reply, err)
	}
}

func TestLogindReboot(t *testing.T) {
	tests := map[string]struct {
		// logind is the peer owning org.freedesktop.login1; nil means the
		// name has no owner.
		logind *fakeLogind
		// wantCalls are the interactive arguments logind received.
		wantCalls []bool
		// wantDBusError is the D-Bus error name Reboot's error carries;
		// empty means Reboot succeeds.
		wantDBusError string
		// wantMessage is a substring of Reboot's error.
		wantMessage string
	}{
		"logind reboots, asked not to be interactive": {
			logind:    &fakeLogind{},
			wantCalls: []bool{false},
		},
		"logind refuses": {
			logind: &fakeLogind{err: dbus.NewError("org.freedesktop.login1.OperationInProgress",
				[]any{"There's already a shutdown or sleep operation in progress"})},
			wantCalls:     []bool{false},
			wantDBusError: "org.freedesktop.login1.OperationInProgress",
			wantMessage:   "ask logind to reboot: There's already a shutdown or sleep operation in progress",
		},
		"nothing owns logind's name": {
			wantDBusError: "org.freedesktop.DBus.Error.ServiceUnknown",
			wantMessage:   "ask logind to reboot",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			addr := startBus(t)
			if tt.logind != nil {
				serveLogind(t, addr, tt.logind)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()

			err := (&Logind{Connect: func() (*dbus.Conn, error) { return dbus.Connect(addr) }}).Reboot(ctx)

			if tt.wantDBusError == "" {
				g.Expect(err).NotTo(HaveOccurred())
			} else {
				var dbusErr dbus.Error
				g.Expect(errors.As(err, &dbusErr)).To(BeTrue(), "error %v carries the D-Bus error", err)
				g.Expect(dbusErr.Name).To(Equal(tt.wantDBusError))
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantMessage)))
			}
			if tt.logind != nil {
				// The reply came after the method returned, so every call
				// is recorded by now.
				g.Expect(tt.logind.interactiveArgs()).To(Equal(tt.wantCalls))
			}
		})
	}
}

func TestLogindRebootWithoutABus(t *testing.T) {
	g := NewWithT(t)
	err := (&Logind{Connect: func() (*dbus.Conn, error) {
		return nil, errors.New("dial unix /run/dbus/system_bus_socket: no such file or directory")
	}}).Reboot(context.Background())
	g.Expect(err).To(MatchError(ContainSubstring("connect to the system bus: dial unix")))
}
