package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"

	"github.com/kmaint/kmaint/operator/metrics"
)

// FragmentationRule is the recording rule of config/prometheus/
// fragmentation-rules.yaml that the memory-fragmentation sample policy
// queries; the policies dashboard shows it beside the policy's values.
const FragmentationRule = "instance:node_memory_unusable_free_index_order9:ratio"

// policySel selects the policy picked in the policy variable.
const policySel = `{policy="$policy"}`

// policies is one RebootPolicy's view: each node's query value against the
// threshold, the candidates it found, the requests it raised and how its
// evaluations go.
func policies() *dashboard.DashboardBuilder {
	m := func(name string) string { return name + policySel }
	rate := func(name string) string { return "rate(" + m(name) + "[$__rate_interval])" }

	d := newDashboard("kmaint-policies", "kmaint / Policies",
		"One RebootPolicy: its query's value per node against the threshold, candidates, requests raised, evaluation errors and duration, conditions.").
		WithVariable(labelVariable("policy", "Policy", metrics.PolicyCondition,
			"The RebootPolicy to show.", false))

	d.WithRow(dashboard.NewRowBuilder("Trigger")).
		WithPanel(dashedLines(timeSeries("Query value per node against threshold",
			"The policy's PromQL result per node at each evaluation (kmaint_policy_query_value) and its threshold (kmaint_policy_threshold, dashed red). A node past the threshold for the policy's `for` becomes a candidate. Prometheus-triggered policies only.",
			unitShort,
			q(m(metrics.PolicyQueryValue), "{{node}}"),
			q(m(metrics.PolicyThreshold), "threshold")), "^threshold$")).
		WithPanel(timeSeries("Candidates by state",
			"Nodes meeting the trigger, by what they wait for (kmaint_policy_candidates): Pending (holding for `for`), Cooldown, OverCap, Requested, WouldRequest (dry run).",
			unitShort,
			q(m(metrics.PolicyCandidates), "{{state}}")).
			Stacking(stackNormal())).
		WithPanel(bars("Requests raised",
			"NodeMaintenance requests the policy raised per interval (increase of kmaint_policy_requests_raised_total).",
			unitShort,
			q("increase("+m(metrics.PolicyRequestsRaised)+"[$__rate_interval])", "raised"))).
		WithPanel(timeSeries("Open requests",
			"The policy's requests not yet finished (kmaint_policy_open_requests); the policy's cap on concurrent requests bounds it.",
			unitShort,
			q(m(metrics.PolicyOpenRequests), "open")))

	d.WithRow(dashboard.NewRowBuilder("Evaluation")).
		WithPanel(timeSeries("Evaluations and errors",
			"Evaluations per minute (kmaint_policy_evaluations_total) and failed ones by reason (kmaint_policy_evaluation_errors_total). While evaluations fail the policy raises no requests.",
			unitCountPerMin,
			q("sum("+rate(metrics.PolicyEvaluationsTotal)+") * 60", "evaluations"),
			q("sum by (reason) ("+rate(metrics.PolicyEvaluationErrorsTotal)+") * 60", "error: {{reason}}")).
			OverrideByRegexp("^error: .*", []dashboard.DynamicConfigValue{{Id: "color", Value: map[string]any{"mode": "fixed", "fixedColor": colorBad}}})).
		WithPanel(timeSeries("Evaluation duration",
			"Time one evaluation takes, query included (kmaint_policy_evaluation_duration_seconds), 50th, 90th and 99th percentile.",
			unitSeconds, quantiles(metrics.PolicyEvaluationDurationSecs, policySel)...)).
		WithPanel(stateTimeline("Conditions",
			"The policy's status conditions over time (kmaint_policy_condition): Ready, QueryFailing, PrometheusUnreachable, CapReached, UnmatchedSeries.",
			valueText(map[string][2]string{"0": {"False", colorNeutral}, "1": {"True", colorWarn}}),
			q(m(metrics.PolicyCondition), "{{condition}}")).
			OverrideByName("Ready", []dashboard.DynamicConfigValue{{Id: "mappings", Value: valueText(map[string][2]string{
				"0": {"False", colorBad}, "1": {"True", colorGood},
			})}})).
		WithPanel(statPanel("Since last evaluation",
			"Seconds since the policy last evaluated (time() - kmaint_policy_last_evaluation_timestamp_seconds). Much more than the policy's interval means the evaluator is stuck or the operator is down.",
			unitSeconds, q("time() - "+m(metrics.PolicyLastEvaluation), "age"),
			thresholds(colorGood, step(120, colorWarn), step(600, colorBad))).Span(12).Height(8))

	d.WithRow(dashboard.NewRowBuilder("Memory fragmentation")).
		WithPanel(timeSeries("Unusable free memory for 2 MiB pages",
			"Per host, the share of free memory in blocks too small for an order-9 (2 MiB) allocation ("+FragmentationRule+", the recording rule in config/prometheus/fragmentation-rules.yaml, from node_exporter's buddyinfo). What the memory-fragmentation sample policy queries; empty where the rule is not loaded.",
			unitPercent,
			q(FragmentationRule, "{{instance}}")).
			Max(1).Span(24))

	return d
}
