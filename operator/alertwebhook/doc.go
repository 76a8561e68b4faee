// Package alertwebhook is the operator's Alertmanager webhook receiver: it
// takes the payloads Alertmanager posts to a webhook_config, checks the bearer
// token they carry against a Secret, checks each alert (labels, status, and
// times against the receiver's clock), and hands the good ones to a Sink,
// which records them for the RebootPolicies with an alert trigger. An alert
// with absurd times is refused on its own, by a 400 that names it and its
// field; the others of its payload are taken.
//
// Record is what a policy keeps of its alerts: the latest episode of each
// alert by node (an episode is one firing, named by the alert's fingerprint
// and startsAt). A firing episode counts until its endsAt or the firing TTL
// after it was last received; an ended one stays ended, so a replayed
// notification cannot make it fire again; and one that started before the
// node's last completed reboot was answered by it.
//
// Server serves HTTPS by default, with a certificate SecretCertificates
// generate and renew in a Secret (or FileCertificates read from mounted
// files); plain HTTP only when asked. Alertmanager is configured like this
// (ca.crt from the certificate Secret, the token file holding the same
// token as the Secret SecretToken reads; max_alerts keeps payloads under
// the Handler's MaxAlerts):
//
//	receivers:
//	- name: kmaint
//	  webhook_configs:
//	  - url: https://kmaint-operator.kmaint-system.svc:9443/alerts
//	    send_resolved: true
//	    max_alerts: 1000
//	    http_config:
//	      authorization:
//	        credentials_file: /etc/alertmanager/secrets/kmaint-webhook/token
//	      tls_config:
//	        ca_file: /etc/alertmanager/secrets/kmaint-webhook/ca.crt
//
// Every replica of the operator serves the webhook, not only the leader:
// Alertmanager may reach any of them, and the sink writes to the API server,
// which orders the writes of all replicas.
package alertwebhook
