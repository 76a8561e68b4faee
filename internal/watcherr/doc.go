// Package watcherr decides which failures of an informer's watch are worth
// an error in the log.
//
// client-go reports every failed watch as an error with its stack. When a
// process stops, an informer that was just opening a watch fails with
// "context canceled": the daemon of every rebooting node, and every
// operator shut down, would log an error for nothing having gone wrong.
package watcherr
