// Package eventrec records Kubernetes Events so that stopping the process
// does not lose the ones just recorded.
//
// controller-runtime's recorders hand each event to client-go's
// broadcaster, which writes it from a goroutine of its own; when the
// manager stops, the broadcaster's context is cancelled at once and an event
// recorded a moment before is dropped ("context canceled"). kmaint tells
// some things once, after the write that records them: a drain forced, a
// health check failed, a node rebooting. The notifier forwards these
// events to people, so an operator upgraded, or a daemon stopped by the
// reboot it asked for, must not lose them.
//
// A Sender queues the events its recorders make and writes them with a few
// workers. Its Stop, called once the controllers have stopped, writes what
// is still queued, for at most a grace period, and says how many it could
// not write. The same event recorded again within RepeatWindow (the same
// object at the same version, reason, action and note) is not written
// again: client-go's recorder made it a series of the first, and the
// people the notifier tells heard of it once. What a process killed
// outright (SIGKILL) had queued is lost, as with any recorder.
package eventrec
