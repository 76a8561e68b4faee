package poolnodes

import (
	"strconv"
	"sync/atomic"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Seen is the newest version of the Nodes a watch's handler was told of:
// the resourceVersion of the newest change, which is etcd's revision of it.
// A watch tells its handler of the changes in the order etcd made them, so
// once the handler was told of version v it was told of every change made
// at v or before; a reconcile that reads Seen before it reads the nodes it
// was told of (TrackNodes tells the Kept first, then Seen) reads a view
// that holds every change of a Node up to that version. An admission or
// approval records it (protocol.Admission.View): a node that went down
// after it was a change no gate could have counted, one before it was in
// the view the gate counted from.
//
// A list after the watch ended (the version it watched from was compacted
// away) hands its changes on in the order of the nodes' names, not their
// versions: while one is handed on, Seen may name a version whose earlier
// changes of other nodes are still to come. The window is the handing on
// of one list, milliseconds; a grace of a fixed length had the same hole,
// and a wider one.
type Seen struct {
	version atomic.Uint64
}

// saw records obj's version, when it is newer than any before. A version
// that is not etcd's number (another store's) claims nothing.
func (s *Seen) saw(obj client.Object) {
	if s == nil {
		return
	}
	v, err := strconv.ParseUint(obj.GetResourceVersion(), 10, 64)
	if err != nil {
		return
	}
	for {
		cur := s.version.Load()
		if v <= cur || s.version.CompareAndSwap(cur, v) {
			return
		}
	}
}

// Version is the newest version seen, "" before the first.
func (s *Seen) Version() string {
	if s == nil {
		return ""
	}
	if v := s.version.Load(); v > 0 {
		return strconv.FormatUint(v, 10)
	}
	return ""
}
