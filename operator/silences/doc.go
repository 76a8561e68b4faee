// Package silences speaks Alertmanager's silences API (v2): it makes,
// reads, extends and expires the silences kmaint holds for a node in
// flight, so that a planned reboot pages no one. Only what kmaint needs is
// here: a silence is matchers, a time span, its author and a comment.
//
// Alertmanager keeps a silence's ID when it is extended only if the update
// carries the silence's start exactly as stored; any other start expires
// it and makes a new one. Extend therefore reads the silence first and
// returns the ID Alertmanager answers.
package silences
