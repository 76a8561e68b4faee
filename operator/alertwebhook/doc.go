// Package alertwebhook is the operator's Alertmanager webhook receiver: it
// takes the payloads Alertmanager posts to a webhook_config, checks the bearer
// token they carry against a Secret, validates them, and hands their alerts
// to a Sink, which raises reboot requests for the RebootPolicies with an
// alert trigger.
//
// Alertmanager is configured like this (the token file holds the same token
// as the Secret SecretToken reads; max_alerts keeps payloads under the
// Handler's MaxAlerts):
//
//	receivers:
//	- name: kmaint
//	  webhook_configs:
//	  - url: https://kmaint-alerts.kmaint-system.svc:9443/alerts
//	    max_alerts: 1000
//	    http_config:
//	      authorization:
//	        credentials_file: /etc/alertmanager/secrets/kmaint-alert-token/token
//
// Every replica of the operator serves the webhook, not only the leader:
// Alertmanager may reach any of them, and the sink writes to the API server,
// which orders the writes of all replicas.
package alertwebhook
