package rebooter

import (
	"context"
	"fmt"

	"github.com/godbus/dbus/v5"
)

// Rebooter reboots the machine. Reboot returns once the reboot is under way;
// the machine going down ends the process some time later.
type Rebooter interface {
	Reboot(ctx context.Context) error
}

// Logind reboots through systemd-logind's D-Bus API, the way `systemctl
// reboot` does, so shutdown inhibitors and the ordered shutdown of units
// apply.
type Logind struct {
	// Connect opens the bus; nil means the system bus.
	Connect func() (*dbus.Conn, error)
}

var _ Rebooter = (*Logind)(nil)

// Reboot calls org.freedesktop.login1.Manager.Reboot. go-systemd's
// login1.Conn.Reboot would drop the call's error, and a reboot that logind
// refused must not look like one under way.
func (l *Logind) Reboot(ctx context.Context) error {
	connect := l.Connect
	if connect == nil {
		connect = func() (*dbus.Conn, error) { return dbus.ConnectSystemBus() }
	}
	conn, err := connect()
	if err != nil {
		return fmt.Errorf("connect to the system bus: %w", err)
	}
	defer conn.Close()
	obj := conn.Object("org.freedesktop.login1", "/org/freedesktop/login1")
	// false: do not ask interactively for authorization; root needs none.
	if err := obj.CallWithContext(ctx, "org.freedesktop.login1.Manager.Reboot", 0, false).Err; err != nil {
		return fmt.Errorf("ask logind to reboot: %w", err)
	}
	return nil
}
