package watcherr

import (
	"context"

	toolscache "k8s.io/client-go/tools/cache"
)

// Handler is an informer's watch error handler (controller-runtime's
// cache.Options.DefaultWatchErrorHandler). It reports a failure as
// client-go's default handler does, unless the informer is stopping: then
// the failure is the stop itself.
func Handler(ctx context.Context, r *toolscache.Reflector, err error) {
	if ctx.Err() != nil {
		return
	}
	toolscache.DefaultWatchErrorHandler(ctx, r, err)
}
