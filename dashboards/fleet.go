package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"

	"github.com/kmaint/kmaint/operator/metrics"
)

// poolSel selects the pools picked in the pool variable (multi-value, so a
// regex match).
const poolSel = `{pool=~"$pool"}`

// fleet is the cluster's view: how far each pool's rollout has come, its
// unavailable nodes against its budget, what asks for reboots, how long
// drains and reboots take and what holds pools back.
func fleet() *dashboard.DashboardBuilder {
	m := func(name string) string { return name + poolSel }
	rate := func(name string) string { return "rate(" + m(name) + "[$__rate_interval])" }
	increase := func(name string) string { return "increase(" + m(name) + "[$__rate_interval])" }

	d := newDashboard("kmaint-fleet", "kmaint / Fleet",
		"Rolling reboots across the cluster's maintenance pools: progress, budget, requests, durations and what blocks admissions.").
		WithVariable(labelVariable("pool", "Pool", metrics.PoolNodes,
			"MaintenancePools to show (the built-in default pool included).", true))

	d.WithRow(dashboard.NewRowBuilder("Overview")).
		WithPanel(statPanel("Nodes",
			"Nodes in the selected pools (kmaint_pool_nodes). A node selected by two pools counts in both.",
			unitShort, q("sum("+m(metrics.PoolNodes)+")", "nodes"), thresholds(colorNeutral))).
		WithPanel(statPanel("Updated",
			"Share of the selected pools' nodes that run their pool's desired config (kmaint_pool_updated_nodes / kmaint_pool_nodes): 100 % when a rollout is done.",
			unitPercent, q("sum("+m(metrics.PoolUpdatedNodes)+") / sum("+m(metrics.PoolNodes)+")", "updated"),
			thresholds(colorWarn, step(1, colorGood))).Min(0).Max(1)).
		WithPanel(statPanel("Unavailable",
			"Nodes now approved, draining, rebooting, not Ready or unschedulable in the selected pools (kmaint_pool_unavailable_nodes): what counts against maxUnavailable.",
			unitShort, q("sum("+m(metrics.PoolUnavailableNodes)+")", "unavailable"),
			thresholds(colorGood, step(1, colorWarn)))).
		WithPanel(statPanel("Pending requests",
			"Reboot requests waiting for admission in the selected pools (kmaint_pool_pending_requests).",
			unitShort, q("sum("+m(metrics.PoolPendingRequests)+")", "pending"),
			thresholds(colorGood, step(1, colorWarn)))).
		WithPanel(statPanel("Blocked pools",
			"Selected pools that admit nothing new now (kmaint_pool_blocked == 1): paused, outside their window, over budget or held by a blocking query. The Blocked pools table says why.",
			unitShort, q("count(max by (pool) ("+m(metrics.PoolBlocked)+") == 1) or vector(0)", "blocked"),
			thresholds(colorGood, step(1, colorBad)))).
		WithPanel(statPanel("Degraded nodes",
			"Degraded nodes in the selected pools (kmaint_pool_degraded_nodes): an approved reboot that did not happen (the daemon reports degraded), or a drain abandoned at its timeout.",
			unitShort, q("sum("+m(metrics.PoolDegradedNodes)+")", "degraded"),
			thresholds(colorGood, step(1, colorBad)))).
		WithPanel(statPanel("Halted pools",
			"Selected pools that halted themselves (kmaint_pool_halted == 1): a node failed a health check after its reboot, or the checks cannot run. They admit nothing until resumed: kubectl kmaint status says which node and check, kubectl kmaint resume POOL goes on.",
			unitShort, q("count(max by (pool) ("+m(metrics.PoolHalted)+") == 1) or vector(0)", "halted"),
			thresholds(colorGood, step(1, colorBad)))).
		WithPanel(statPanel("Settling nodes",
			"Nodes back from their reboot that keep their slot while they settle (kmaint_pool_settling_nodes): the pool's settleTime, and its health checks passing all the while.",
			unitShort, q("sum("+m(metrics.PoolSettlingNodes)+")", "settling"),
			thresholds(colorNeutral))).
		WithPanel(statPanel("Frozen pools",
			"Selected pools in one of their freeze periods now (kmaint_pool_frozen == 1): nothing new is admitted, whatever the windows say; only requests with ignoreFreezes pass.",
			unitShort, q("count(max by (pool) ("+m(metrics.PoolFrozen)+") == 1) or vector(0)", "frozen"),
			thresholds(colorGood, step(1, colorWarn)))).
		WithPanel(statPanel("Opted-out nodes",
			"Nodes waiting to reboot that their own annotation (kmaint.io/do-not-disrupt, karpenter.sh/do-not-disrupt) or pods hold back (kmaint_pool_opted_out_nodes).",
			unitShort, q("sum("+m(metrics.PoolOptedOutNodes)+")", "opted out"),
			thresholds(colorGood, step(1, colorWarn)))).
		WithPanel(statPanel("Cluster paused",
			"Whether every pool is stopped at once by the MaintenanceGate named cluster (kmaint_cluster_paused: kubectl kmaint pause --all, or the gate cannot be read). kubectl kmaint resume --all lifts it.",
			unitShort, q("max("+metrics.ClusterPaused+")", "paused"),
			thresholds(colorGood, step(1, colorBad))).
			Mappings(valueText(map[string][2]string{"0": {"running", colorGood}, "1": {"PAUSED", colorBad}})))

	d.WithRow(dashboard.NewRowBuilder("Rollout")).
		WithPanel(barGauge("Rollout progress per pool",
			"Per pool, the share of nodes running the pool's desired config (kmaint_pool_updated_nodes / kmaint_pool_nodes). Empty pools are left out.",
			unitPercent, q(m(metrics.PoolUpdatedNodes)+" / ("+m(metrics.PoolNodes)+" > 0)", "{{pool}}"),
			thresholds(colorWarn, step(1, colorGood))).Min(0).Max(1)).
		WithPanel(timeSeries("Updated nodes against total",
			"Per pool, nodes on the desired config (solid) and all nodes (dashed): the gap is what the rollout still has to reboot.",
			unitShort,
			q(m(metrics.PoolUpdatedNodes), "{{pool}} updated"),
			q(m(metrics.PoolNodes), "{{pool}} total")).
			OverrideByRegexp(".* total$", []dashboard.DynamicConfigValue{
				{Id: "custom.lineStyle", Value: map[string]any{"fill": "dash", "dash": []int{10, 10}}},
				{Id: "custom.fillOpacity", Value: 0},
			})).
		WithPanel(dashedLines(timeSeries("Unavailable against budget",
			"Per pool, nodes unavailable (kmaint_pool_unavailable_nodes) against the pool's maxUnavailable (kmaint_pool_max_unavailable, dashed red). The gate never admits a node that would take the first above the second.",
			unitShort,
			q(m(metrics.PoolUnavailableNodes), "{{pool}} unavailable"),
			q(m(metrics.PoolMaxUnavailable), "{{pool}} budget")), ".* budget$")).
		WithPanel(timeSeries("Draining, rebooting, settling, degraded",
			"Per pool, nodes kmaint is draining (kmaint_pool_draining_nodes), nodes rebooting (kmaint_pool_rebooting_nodes), nodes back that keep their slot while they settle (kmaint_pool_settling_nodes) and nodes degraded (kmaint_pool_degraded_nodes).",
			unitShort,
			q(m(metrics.PoolDrainingNodes), "{{pool}} draining"),
			q(m(metrics.PoolRebootingNodes), "{{pool}} rebooting"),
			q(m(metrics.PoolSettlingNodes), "{{pool}} settling"),
			q(m(metrics.PoolDegradedNodes), "{{pool}} degraded")))

	d.WithRow(dashboard.NewRowBuilder("Guard: settle time, health checks, freezes")).
		WithPanel(stateTimeline("Halted and frozen pools",
			"Per pool, when it was halted by its health checks (kmaint_pool_halted: a node failed one after its reboot, or they could not run) and when one of its freezes was in force (kmaint_pool_frozen). Either way it admitted nothing new.",
			valueText(map[string][2]string{"0": {"no", colorGood}, "1": {"yes", colorBad}}),
			q(m(metrics.PoolHalted), "{{pool}} halted"),
			q(m(metrics.PoolFrozen), "{{pool}} frozen")).
			OverrideByRegexp(".* frozen$", []dashboard.DynamicConfigValue{{Id: "mappings", Value: valueText(map[string][2]string{
				"0": {"open", colorGood}, "1": {"frozen", colorWarn},
			})}})).
		WithPanel(timeSeries("Settling nodes",
			"Per pool, nodes back from their reboot that keep their slot in the budget for the pool's settle time while their health checks run (kmaint_pool_settling_nodes). A node that fails a check stays here until the pool is resumed.",
			unitShort,
			q(m(metrics.PoolSettlingNodes), "{{pool}}"))).
		WithPanel(bars("Health check failures by check",
			"Per pool and check, settling nodes found bad by a health check per interval (kmaint_health_check_failures_total); each one halts its pool.",
			unitShort,
			q("sum by (pool, check) ("+increase(metrics.HealthCheckFailuresTotal)+")", "{{pool}}: {{check}}"))).
		WithPanel(timeSeries("Nodes at hooks",
			"Per pool, nodes that wait at one of its hooks (before the drain, before the reboot, after it), or whose hook failed (kmaint_pool_hook_nodes); each keeps its slot in the budget.",
			unitShort,
			q(m(metrics.PoolHookNodes), "{{pool}}"))).
		WithPanel(timeSeries("Hook durations",
			"Per pool, point and hook, the 90th percentile of how long an attempt of a hook took, passed or failed (kmaint_hook_duration_seconds): an upgrade Job, a check, another controller's acknowledgement. The node keeps its slot meanwhile.",
			unitSeconds,
			q("histogram_quantile(0.9, sum by (pool, point, hook, le) ("+rate(metrics.HookDurationSeconds+"_bucket")+"))", "{{pool}} {{point}} {{hook}}"))).
		WithPanel(bars("Hook failures",
			"Per pool, point, hook and reason, failed attempts of hooks per interval (kmaint_hook_failures_total): a timeout, a Job that failed, was lost or could not be made. With onFailure Halt each halts its pool.",
			unitShort,
			q("sum by (pool, point, hook, reason) ("+increase(metrics.HookFailuresTotal)+")", "{{pool}} {{point}} {{hook}}: {{reason}}")))

	d.WithRow(dashboard.NewRowBuilder("Requests")).
		WithPanel(timeSeries("Requests by source",
			"Reboot requests per minute by where they came from (kmaint_requests_total): host, api, config, metric or schedule.",
			unitPerMinute,
			q("sum by (source) ("+rate(metrics.RequestsTotal)+") * 60", "{{source}}"))).
		WithPanel(timeSeries("Pending requests",
			"Per pool, requests waiting for admission (kmaint_pool_pending_requests): they wait for budget, a window or an unblocked pool.",
			unitShort,
			q(m(metrics.PoolPendingRequests), "{{pool}}"))).
		WithPanel(bars("Admissions",
			"Nodes the gate admitted (cordoned and started draining) per interval, per pool (kmaint_admissions_total).",
			unitShort,
			q("sum by (pool) ("+increase(metrics.AdmissionsTotal)+")", "{{pool}}"))).
		WithPanel(bars("Maintenances completed",
			"Requests that ended per interval, by result (kmaint_maintenances_completed_total): Succeeded or Failed.",
			unitShort,
			q("sum by (result) ("+increase(metrics.MaintenancesCompletedTotal)+")", "{{result}}")).
			OverrideByName("Failed", []dashboard.DynamicConfigValue{{Id: "color", Value: map[string]any{"mode": "fixed", "fixedColor": colorBad}}}).
			OverrideByName("Succeeded", []dashboard.DynamicConfigValue{{Id: "color", Value: map[string]any{"mode": "fixed", "fixedColor": colorGood}}}))

	d.WithRow(dashboard.NewRowBuilder("Durations")).
		WithPanel(timeSeries("Reboot duration",
			"Time from approval to the node back Ready with a new boot ID (kmaint_reboot_duration_seconds), 50th, 90th and 99th percentile over the selected pools. Empty while no reboot finished in the interval.",
			unitSeconds, quantiles(metrics.RebootDurationSeconds, poolSel)...)).
		WithPanel(timeSeries("Drain duration",
			"Time from admission to the node drained (kmaint_drain_duration_seconds), 50th, 90th and 99th percentile over the selected pools. Empty while no drain finished in the interval.",
			unitSeconds, quantiles(metrics.DrainDurationSeconds, poolSel)...))

	d.WithRow(dashboard.NewRowBuilder("Gate")).
		WithPanel(stateTimeline("Blocked pools over time",
			"Per pool and reason, when the pool admitted nothing new (kmaint_pool_blocked == 1): Paused, OutsideWindow, BudgetExhausted, BlockingQuery.",
			valueText(map[string][2]string{"1": {"blocked", colorBad}}),
			q(m(metrics.PoolBlocked)+" == 1", "{{pool}}: {{reason}}"))).
		WithPanel(instantTable("Blocked pools",
			"Pools blocked now and why (kmaint_pool_blocked == 1, the Blocked condition's reason).",
			m(metrics.PoolBlocked)+" == 1", "pool", "reason")).
		WithPanel(stateTimeline("Maintenance windows",
			"Per pool, whether a maintenance window is open (kmaint_pool_window_open; a pool without windows is always open) and whether the pool is paused (kmaint_pool_paused).",
			valueText(map[string][2]string{"0": {"closed", colorNeutral}, "1": {"open", colorGood}}),
			q(m(metrics.PoolWindowOpen), "{{pool}} window"),
			q(m(metrics.PoolPaused), "{{pool}} paused")).
			OverrideByRegexp(".* paused$", []dashboard.DynamicConfigValue{{Id: "mappings", Value: valueText(map[string][2]string{
				"0": {"running", colorGood}, "1": {"paused", colorWarn},
			})}})).
		WithPanel(bars("Drain and reboot failures",
			"Per pool and reason, drains abandoned (kmaint_drain_failures_total, e.g. DrainTimeout) and reboots that failed (kmaint_reboot_failures_total, e.g. no new boot ID) per interval.",
			unitShort,
			q("sum by (pool, reason) ("+increase(metrics.DrainFailuresTotal)+")", "drain {{pool}}: {{reason}}"),
			q("sum by (pool, reason) ("+increase(metrics.RebootFailuresTotal)+")", "reboot {{pool}}: {{reason}}"))).
		WithPanel(bars("Drains retried and forced",
			"Per pool, drains that ran past their timeout and are tried again later (kmaint_drain_retries_total, onDrainTimeout Retry), drains forced at their timeout (kmaint_drains_forced_total, onDrainTimeout Force) and the pods those forced drains deleted despite their PodDisruptionBudgets (kmaint_drain_forced_pods_total), per interval.",
			unitShort,
			q("sum by (pool) ("+increase(metrics.DrainRetriesTotal)+")", "retried {{pool}}"),
			q("sum by (pool) ("+increase(metrics.DrainsForcedTotal)+")", "forced {{pool}}"),
			q("sum by (pool) ("+increase(metrics.DrainForcedPodsTotal)+")", "pods deleted {{pool}}"))).
		WithPanel(timeSeries("Opted-out nodes",
			"Per pool, nodes waiting to reboot that are held back by their own opt-out annotation or by their pods (kmaint_pool_opted_out_nodes); kubectl kmaint status says which and why.",
			unitShort,
			q(m(metrics.PoolOptedOutNodes), "{{pool}}")))

	d.WithRow(dashboard.NewRowBuilder("Notifications")).
		WithPanel(bars("Notification messages",
			"Chat messages per interval by receiver and result (kmaint_notification_messages_total): sent, failed, or skipped while the receiver still hung on an earlier one. Empty unless the operator runs with --notify-urls-file.",
			unitShort,
			q("sum by (receiver, result) (increase("+metrics.NotificationMessagesTotal+"[$__rate_interval]))", "{{receiver}} {{result}}")).
			OverrideByRegexp(".* failed$", []dashboard.DynamicConfigValue{{Id: "color", Value: map[string]any{"mode": "fixed", "fixedColor": colorBad}}})).
		WithPanel(timeSeries("Notified events",
			"Events taken for a message per minute, by reason (kmaint_notification_events_total), events only counted in a full message's summary (kmaint_notification_events_summarized_total), and the receivers configured by state (kmaint_notification_receivers: valid, or invalid and left out).",
			unitShort,
			q("sum by (reason) (rate("+metrics.NotificationEventsTotal+"[$__rate_interval])) * 60", "{{reason}} /min"),
			q("sum(rate("+metrics.NotificationSummarizedTotal+"[$__rate_interval])) * 60", "summarized /min"),
			q("max by (state) ("+metrics.NotificationReceivers+")", "receivers {{state}}")))

	return d
}

// quantiles are the 50th, 90th and 99th percentile of a histogram over the
// series sel picks.
func quantiles(histogram, sel string) []target {
	var ts []target
	for _, p := range []struct{ q, legend string }{{"0.5", "p50"}, {"0.9", "p90"}, {"0.99", "p99"}} {
		ts = append(ts, q("histogram_quantile("+p.q+", sum by (le) (rate("+histogram+"_bucket"+sel+"[$__rate_interval])))", p.legend))
	}
	return ts
}
