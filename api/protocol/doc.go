// Package protocol is the node protocol: the kmaint.io/ annotations on each
// Node through which the daemon and the operator talk, each written by one
// side only, and the codecs for their values.
//
// Read is the one way to read a Node: it decodes every annotation once and
// derives what every reader needs (the requests of the current boot, whether
// the node is admitted, draining, approved, back, degraded, and its Stage),
// with one rule for an annotation that cannot be read: the node is never
// admitted, approved or taken for rebooted, and says why.
//
// The Transitions are the one way the operator writes a Node. Each sets (+)
// and removes (-) exactly these, and nothing else; "back in service" is -
// cordoned (and the cordon, when kmaint put it there), - marks (and the
// labels and taints they record) and - the hooks' acknowledgements
// (hooks.kmaint.io/*, each for the admission that ends):
//
//	transition             writes
//	SetDesiredConfig       ± desired-config
//	OfferAPIRequests       + api-requests
//	HoldAdmission          ± admission-held
//	Admit                  + admitted, - admission-held, + cordoned (and the cordon) unless cordoned already
//	AdmitUnsilenced        + admitted, - admission-held (Recordon once its silences are made)
//	Recordon               + cordoned (and the cordon) unless cordoned already
//	Redrain                Recordon, - hook
//	Mark                   + marks (and the labels and taints they record)
//	Approve                + reboot-approved, + admitted (approvedAt), - drain-forced unless forced
//	RecordForcing          + drain-forced
//	Release                - admitted, - hook, back in service
//	Retry                  Release, + drain-retry
//	Abandon                Release, - drain-retry, + drain-failed
//	CompleteWithoutDaemon  - reboot-approved, - admitted, - drain-failed, - node-not-back, - drain-retry,
//	                       - hook, back in service, the afterReboot labels, + settling when the pool settles
//	Complete               CompleteWithoutDaemon, - reboot-unconfirmed
//	AwaitDaemon            + reboot-unconfirmed
//	ForgetUnconfirmed      - reboot-unconfirmed
//	TimeReturn             + admitted (approvedAt)
//	MarkNotBack            + node-not-back
//	ForgetNotBack          - node-not-back
//	UpdateSettle           + settling
//	Settled                - settling
//	RecordHooks            + hook
//	ForgetHooks            - hook
//	RecordSilences         + silences
//	ForgetSilences         - silences
//
// A new annotation of the operator is added here: its constant, its value's
// type, what Read makes of it, and the transitions that write it.
package protocol
