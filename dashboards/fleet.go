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
			thresholds(colorGood, step(1, colorBad))))

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
		WithPanel(timeSeries("Draining, rebooting, degraded",
			"Per pool, nodes kmaint is draining (kmaint_pool_draining_nodes), nodes rebooting (kmaint_pool_rebooting_nodes) and nodes degraded (kmaint_pool_degraded_nodes).",
			unitShort,
			q(m(metrics.PoolDrainingNodes), "{{pool}} draining"),
			q(m(metrics.PoolRebootingNodes), "{{pool}} rebooting"),
			q(m(metrics.PoolDegradedNodes), "{{pool}} degraded")))

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
			q("sum by (pool, reason) ("+increase(metrics.RebootFailuresTotal)+")", "reboot {{pool}}: {{reason}}")))

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
