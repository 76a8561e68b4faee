package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"

	"github.com/kmaint/kmaint/operator/metrics"
)

// nodeSel selects the node picked in the node variable.
const nodeSel = `{node="$node"}`

// node is one node's view from its daemon: what it is doing, the requests
// it holds, its reboots, and the policy values kmaint sees for it.
func node() *dashboard.DashboardBuilder {
	m := func(name string) string { return name + nodeSel }

	d := newDashboard("kmaint-node", "kmaint / Node",
		"One node as its kmaint-daemon reports it: state, outstanding requests, requests by source, reboots, and the reboot policies' values for it.").
		WithVariable(labelVariable("node", "Node", metrics.DaemonState,
			"The node (Kubernetes Node name) to show.", false))

	d.WithRow(dashboard.NewRowBuilder("Daemon")).
		WithPanel(stateTimeline("Daemon state",
			"What the node's daemon is doing over time (kmaint_daemon_state == 1): idle, requested (holds requests), rebooting, degraded (e.g. an approved reboot that did not happen).",
			valueText(map[string][2]string{"1": {"active", colorGood}}),
			q(m(metrics.DaemonState)+" == 1", "{{state}}")).
			OverrideByName("degraded", []dashboard.DynamicConfigValue{{Id: "mappings", Value: valueText(map[string][2]string{"1": {"active", colorBad}})}}).
			OverrideByName("requested", []dashboard.DynamicConfigValue{{Id: "mappings", Value: valueText(map[string][2]string{"1": {"active", colorWarn}})}}).
			OverrideByName("rebooting", []dashboard.DynamicConfigValue{{Id: "mappings", Value: valueText(map[string][2]string{"1": {"active", "blue"}})}})).
		WithPanel(timeSeries("Outstanding requests",
			"Requests journaled in the node's current boot and not yet satisfied by a reboot (kmaint_daemon_outstanding_requests). They drop to 0 after the reboot.",
			unitShort,
			q(m(metrics.DaemonOutstandingRequest), "outstanding")).
			DrawStyle(common.GraphDrawStyleLine).
			LineInterpolation(common.LineInterpolationStepAfter)).
		WithPanel(bars("Requests by source",
			"Requests the daemon read from the journal per interval, by source (kmaint_daemon_requests_total): host, api, config, metric, schedule.",
			unitShort,
			q("sum by (source) (increase("+m(metrics.DaemonRequestsTotal)+"[$__rate_interval]))", "{{source}}"))).
		WithPanel(bars("Reboots",
			"Boots the node began per interval (changes of kmaint_daemon_boot_time_seconds, which the daemon reads once at start), whatever caused them. The daemon's own count of reboots it started (kmaint_daemon_reboots_total) rarely shows: it rises moments before the node goes down, and the next boot's daemon counts from 0; the Fleet dashboard's reboot durations count kmaint's reboots.",
			unitShort,
			q("changes("+m(metrics.DaemonBootTimeSeconds)+"[$__rate_interval])", "new boots")).
			Stacking(stackNone())).
		WithPanel(statPanel("Uptime",
			"Time since the node's current boot began (time() - kmaint_daemon_boot_time_seconds).",
			unitSeconds, q("time() - "+m(metrics.DaemonBootTimeSeconds), "uptime"), thresholds(colorNeutral)).
			Span(12)).
		WithPanel(statPanel("Boots in range",
			"Boots that began in the dashboard's time range (changes of kmaint_daemon_boot_time_seconds over $__range).",
			unitShort, q("changes("+m(metrics.DaemonBootTimeSeconds)+"[$__range])", "boots"), thresholds(colorNeutral)).
			Span(12))

	d.WithRow(dashboard.NewRowBuilder("Policies")).
		WithPanel(dashedLines(timeSeries("Policy values for this node",
			"Each RebootPolicy's query value for this node (kmaint_policy_query_value) and that policy's threshold (kmaint_policy_threshold, dashed red).",
			unitShort,
			q(metrics.PolicyQueryValue+nodeSel, "{{policy}}"),
			q(metrics.PolicyThreshold+" and on (policy) "+metrics.PolicyQueryValue+nodeSel, "{{policy}} threshold")), ".* threshold$").
			Span(24))

	return d
}
