// Package chatrecv is a local chat receiver for the notifier's tests: an
// HTTP server that shoutrrr's generic webhook service posts to, which
// records each message, and can answer with an error or hang as a chat
// service in trouble would.
package chatrecv
