package operator

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kmaint/kmaint/internal/eventrec"
)

// withEvents is the operator's manager with the sender of its controllers'
// events, which writes from before they start until after they stop: the
// events a controller records just before a stop (an operator upgraded
// right after it forced a drain) are written, not dropped with the
// manager's own recorder (package eventrec).
type withEvents struct {
	manager.Manager
	events *eventrec.Sender
}

// Start runs the manager until ctx is done, then writes the events still
// queued.
func (m withEvents) Start(ctx context.Context) error {
	m.events.Start()
	err := m.Manager.Start(ctx)
	if serr := m.events.Stop(eventrec.DefaultGrace); serr != nil {
		// The stop itself went well: what was lost is told, not returned.
		m.GetLogger().Error(serr, "Events lost at the stop")
	}
	return err
}
