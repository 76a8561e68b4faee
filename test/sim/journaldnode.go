package sim

import (
	"context"
	"fmt"

	"github.com/kmaint/kmaint/test/node"
)

// journaldNode adapts a node with its own journald to Node.
type journaldNode struct {
	name string
	self string
	n    *node.Node
}

func (j *journaldNode) Name() string                          { return j.name }
func (j *journaldNode) BootID() string                        { return j.n.BootID() }
func (j *journaldNode) Reboots() int                          { return j.n.Reboots() }
func (j *journaldNode) StartDaemon(ctx context.Context) error { return j.n.StartDaemon(ctx) }
func (j *journaldNode) KillDaemon()                           { j.n.KillDaemon() }
func (j *journaldNode) Stop()                                 { j.n.Stop() }

func (j *journaldNode) ForceReboot(ctx context.Context) error { return j.n.Reboot(ctx) }

func (j *journaldNode) IgnoreReboots(ignore bool) { j.n.SetIgnoreReboots(ignore) }

func (j *journaldNode) SetNoDaemonOnBoot(absent bool) { j.n.SetNoDaemonOnBoot(absent) }

func (j *journaldNode) RequestReboot(reason string) error {
	out, err := j.n.Exec(context.Background(), 0, "env", node.DaemonEnv+"=1", j.self, "request-reboot", reason)
	if err != nil {
		return fmt.Errorf("request-reboot on %s: %w: %s", j.name, err, out)
	}
	return nil
}
