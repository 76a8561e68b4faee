package daemon

import (
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
)

// Hook changes what Run takes from the process and the machine it runs in.
// The kmaint-daemon binary has both to itself and passes none; the simulated
// cluster (test/sim) runs a daemon per simulated node in one process, on
// nodes that have no kernel of their own, and passes these.
type Hook func(*inProcess)

// inProcess is what the hooks replace; the zero value is the binary's.
type inProcess struct {
	// bootID replaces reading Options.BootIDPath.
	bootID string
	// bootTime replaces the btime of /proc/stat.
	bootTime time.Time
	// registerer replaces controller-runtime's registry.
	registerer prometheus.Registerer
	// logger replaces controller-runtime's global logger.
	logger *logr.Logger
	// restMapper replaces the manager's own, which costs API discovery.
	restMapper meta.RESTMapper
	// scheme replaces the daemon's own.
	scheme *runtime.Scheme
	// duplicateNames lets the controller's name repeat in the process.
	duplicateNames bool
}

// WithBoot is the node's current boot, for a simulated node that has no
// boot ID file or /proc/stat of its own. An empty id or a zero time reads
// the host's, as without the hook.
func WithBoot(id string, began time.Time) Hook {
	return func(in *inProcess) { in.bootID, in.bootTime = id, began }
}

// WithRegisterer registers the daemon's metrics with reg instead of
// controller-runtime's registry, which every daemon in a process would share
// and which takes each metric once.
func WithRegisterer(reg prometheus.Registerer) Hook {
	return func(in *inProcess) { in.registerer = reg }
}

// WithLogger logs to log instead of controller-runtime's global logger.
func WithLogger(log logr.Logger) Hook {
	return func(in *inProcess) { in.logger = &log }
}

// WithRESTMapper shares mapper with other daemons of the same process, so
// that a daemon restarting after its node's reboot costs no API discovery.
func WithRESTMapper(mapper meta.RESTMapper) Hook {
	return func(in *inProcess) { in.restMapper = mapper }
}

// WithScheme shares s, which must hold kmaint's types (scheme.New), with
// other daemons of the same process: a scheme of every built-in type costs
// some 170 KB, a gigabyte in a simulated cluster of 5000 nodes.
func WithScheme(s *runtime.Scheme) Hook {
	return func(in *inProcess) { in.scheme = s }
}

// WithDuplicateControllerNames lets several daemons run in one process:
// controller-runtime otherwise refuses a second controller named "daemon".
func WithDuplicateControllerNames() Hook {
	return func(in *inProcess) { in.duplicateNames = true }
}
