// Package notify tells people, through chat services, what kmaint did that
// they want to hear about: a pool's rollout started or finished, a drain
// abandoned or forced, a node degraded, a reboot loop.
//
// It follows kmaint's own Kubernetes Events, as a person running `kubectl
// get events` would, rather than hooking into the controllers: the gate and
// the daemon record them anyway, and a notifier that only reads them can
// never delay or block a reboot. It runs on the leader only and watches the
// Events (events.k8s.io/v1) of namespace default, where the events of
// cluster-scoped objects go, with a field selector per reporting
// controller, so that the API server sends kmaint's events and no others.
//
// What it sends: events whose reason is in Options.Reasons, each one line
// (the pool's copy of an event the gate records on a node and its pool, not
// both). Lines are coalesced: the first event after a quiet spell is sent at
// once, later ones wait until Options.Interval has passed since the last
// message and go out together, at most MaxLines lines a message and the
// rest counted by reason, so a rollout over 500 nodes sends a handful of
// messages, not 500.
//
// What it never does: block. Events are taken under a mutex into a bounded
// batch; a sender goroutine delivers messages through shoutrrr
// (github.com/nicholas-fedor/shoutrrr: Slack, Teams, Mattermost, Telegram,
// generic webhooks and more, each configured by one URL), waiting at most
// Options.SendTimeout for a receiver. A receiver still busy with an earlier
// message is skipped; a failed or skipped message is dropped, counted in
// kmaint_notification_messages_total and logged. A chat outage delays no
// reboot and grows no queue.
//
// What it does not replay: events already stored when the notifier starts
// (on an operator start or a change of leader) are skipped, unless they
// were recorded after its start. A failover therefore loses the events
// recorded between the old leader's last message and the new leader's
// start (the leader election's lease, 15s by default, and the start), and
// whatever the old leader had not sent yet (one Interval's batch at most).
//
// The receivers' URLs hold tokens: they are read from a file (a Secret
// mounted into the pod), one per line, read again when it changes, never
// from a flag. A URL that cannot be parsed is reported (log, the gauge
// kmaint_notification_receivers{state="invalid"}) and left out; the
// operator runs on, since a typo in a chat URL must not stop reboots.
package notify
