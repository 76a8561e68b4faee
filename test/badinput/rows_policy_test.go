package badinput

import (
	"strings"
	"testing"
)

const policySurface = "RebootPolicy"

// scheduleSpec is a valid schedule policy selecting no node of the matrix:
// one that fires never raises anything.
func scheduleSpec(kv ...any) map[string]any {
	base := map[string]any{
		"nodeSelector": map[string]any{"matchLabels": map[string]any{poolLabel: "none"}},
		"schedule":     map[string]any{"cron": "0 3 1 * *"},
	}
	return with(base, kv...)
}

func promSpec(kv ...any) map[string]any {
	return with(map[string]any{"query": "node_needs_reboot", "threshold": "1"}, kv...)
}

func alertSpec(kv ...any) map[string]any {
	return with(map[string]any{"alertName": "NodeNeedsReboot"}, kv...)
}

func conditionSpec(kv ...any) map[string]any {
	return with(map[string]any{"type": "KernelDeadlock"}, kv...)
}

func policyRows() []row {
	refuse := func(name, field string, spec map[string]any) row {
		return refusedSpec(policySurface, name, "RebootPolicy", field, spec)
	}
	onlyProm := func(p map[string]any) map[string]any {
		return scheduleSpec("schedule", nil, "prometheus", p)
	}
	onlyAlert := func(a map[string]any) map[string]any {
		return scheduleSpec("schedule", nil, "alert", a)
	}
	onlyCondition := func(c map[string]any) map[string]any {
		return scheduleSpec("schedule", nil, "nodeCondition", c)
	}
	many := func(n int, item any) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = item
		}
		return out
	}
	rows := []row{
		refuse("no trigger", "exactly one trigger", scheduleSpec("schedule", nil)),
		refuse("schedule and alert", "exactly one trigger", scheduleSpec("alert", alertSpec())),
		refuse("threshold abc", "spec.prometheus.threshold", onlyProm(promSpec("threshold", "abc"))),
		refuse("threshold NaN", "spec.prometheus.threshold", onlyProm(promSpec("threshold", "NaN"))),
		refuse("threshold +Inf", "spec.prometheus.threshold", onlyProm(promSpec("threshold", "+Inf"))),
		refuse("threshold as a number", "spec.prometheus.threshold", onlyProm(promSpec("threshold", 0.9))),
		refuse("comparison !=", "spec.prometheus.comparison", onlyProm(promSpec("comparison", "!="))),
		refuse("query empty", "spec.prometheus.query", onlyProm(promSpec("query", ""))),
		refuse("query of 5000 characters", "spec.prometheus.query", onlyProm(promSpec("query", strings.Repeat("u", 5000)))),
		refuse("for -5m", "spec.prometheus.for", onlyProm(promSpec("for", "-5m"))),
		refuse("for forever", "spec.prometheus.for", onlyProm(promSpec("for", "forever"))),
		refuse("interval 500ms", "spec.prometheus.interval", onlyProm(promSpec("interval", "500ms"))),
		refuse("interval 0s", "spec.prometheus.interval", onlyProm(promSpec("interval", "0s"))),
		refuse("node label of 200 characters", "spec.prometheus.nodeLabel", onlyProm(promSpec("nodeLabel", strings.Repeat("l", 200)))),
		refuse("matchNodeBy Label", "spec.prometheus.matchNodeBy", onlyProm(promSpec("matchNodeBy", "Label"))),
		refuse("cron empty", "spec.schedule.cron", scheduleSpec("schedule", map[string]any{"cron": ""})),
		refuse("cron of 200 characters", "spec.schedule.cron", scheduleSpec("schedule", map[string]any{"cron": strings.Repeat("1", 200)})),
		refuse("schedule time zone of 100 characters", "spec.schedule.timeZone", scheduleSpec("schedule", map[string]any{"cron": "0 3 1 * *", "timeZone": strings.Repeat("z", 100)})),
		refuse("alert name empty", "spec.alert.alertName", onlyAlert(alertSpec("alertName", ""))),
		refuse("alert name of 300 characters", "spec.alert.alertName", onlyAlert(alertSpec("alertName", strings.Repeat("a", 300)))),
		refuse("alert matchNodeBy Label", "spec.alert.matchNodeBy", onlyAlert(alertSpec("matchNodeBy", "Label"))),
		refuse("schedule and nodeCondition", "exactly one trigger", scheduleSpec("nodeCondition", conditionSpec())),
		refuse("nodeCondition without a type", "spec.nodeCondition.type", onlyCondition(conditionSpec("type", nil))),
		refuse("nodeCondition type empty", "spec.nodeCondition.type", onlyCondition(conditionSpec("type", ""))),
		refuse("nodeCondition type of 400 characters", "spec.nodeCondition.type", onlyCondition(conditionSpec("type", strings.Repeat("K", 400)))),
		refuse("nodeCondition type with a space", "spec.nodeCondition.type", onlyCondition(conditionSpec("type", "Kernel Deadlock"))),
		refuse("nodeCondition type with two prefixes", "spec.nodeCondition.type", onlyCondition(conditionSpec("type", "a.io/b/KernelDeadlock"))),
		refuse("nodeCondition type with a newline", "spec.nodeCondition.type", onlyCondition(conditionSpec("type", "KernelDeadlock\nReady"))),
		refuse("nodeCondition type as a number", "spec.nodeCondition.type", onlyCondition(conditionSpec("type", 5))),
		refuse("nodeCondition status true", "spec.nodeCondition.status", onlyCondition(conditionSpec("status", "true"))),
		refuse("nodeCondition status Maybe", "spec.nodeCondition.status", onlyCondition(conditionSpec("status", "Maybe"))),
		refuse("nodeCondition status as a boolean", "spec.nodeCondition.status", onlyCondition(conditionSpec("status", true))),
		refuse("nodeCondition for -5m", "spec.nodeCondition.for", onlyCondition(conditionSpec("for", "-5m"))),
		refuse("nodeCondition for forever", "spec.nodeCondition.for", onlyCondition(conditionSpec("for", "forever"))),
		refuse("nodeCondition for 8761h", "spec.nodeCondition.for", onlyCondition(conditionSpec("for", "8761h"))),
		refuse("nodeCondition for as a number", "spec.nodeCondition.for", onlyCondition(conditionSpec("for", 300))),
		refuse("cooldown 1d", "spec.cooldown", scheduleSpec("cooldown", "1d")),
		refuse("cooldown -1h", "spec.cooldown", scheduleSpec("cooldown", "-1h")),
		refuse("maxConcurrentRequests 0", "spec.maxConcurrentRequests", scheduleSpec("maxConcurrentRequests", 0)),
		refuse("maxConcurrentRequests 0%", "spec.maxConcurrentRequests", scheduleSpec("maxConcurrentRequests", "0%")),
		refuse("maxConcurrentRequests 2^31", "spec.maxConcurrentRequests", scheduleSpec("maxConcurrentRequests", int64(1)<<31)),
		refuse("maxConcurrentRequests 101%", "spec.maxConcurrentRequests", scheduleSpec("maxConcurrentRequests", "101%")),
		refuse("maxConcurrentRequests abc", "spec.maxConcurrentRequests", scheduleSpec("maxConcurrentRequests", "abc")),
		refuse("33 windows", "spec.windows", scheduleSpec("windows", many(33, windowSpec()))),
		refuse("window duration 10x", "spec.windows[0].duration", scheduleSpec("windows", []any{windowSpec("duration", "10x")})),
		refuse("dryRun maybe", "spec.dryRun", scheduleSpec("dryRun", "maybe")),
	}

	// Schedules the API server cannot judge: the policy raises nothing and
	// says its spec is invalid.
	invalidSpec := func(name string, spec map[string]any) row {
		return row{
			surface: policySurface,
			name:    name,
			send: func(t *testing.T, _ *env) (shown, error) {
				u, err := createRow(t, "RebootPolicy", name, spec)
				if err != nil {
					return nil, err
				}
				return policyConditions(u.GetName()), nil
			},
			want: containedAs("InvalidSpec"),
		}
	}
	cron := func(c string, kv ...any) map[string]any {
		return scheduleSpec("schedule", with(map[string]any{"cron": c}, kv...))
	}
	rows = append(rows,
		invalidSpec("cron @every 1s", cron("@every 1s")),
		invalidSpec("cron @hourly", cron("@hourly")),
		invalidSpec("cron on February 30", cron("0 3 30 2 *")),
		invalidSpec("cron with a CRON_TZ prefix", cron("CRON_TZ=Asia/Tokyo 0 3 * * *")),
		invalidSpec("cron in time zone Local", cron("0 3 * * *", "timeZone", "Local")),
		invalidSpec("cron in an unknown time zone", cron("0 3 * * *", "timeZone", "Mars/Olympus_Mons")),
		invalidSpec("cron of four fields", cron("0 3 * *")),
		invalidSpec("window @every 1s", scheduleSpec("windows", []any{windowSpec("schedule", "@every 1s")})),
	)
	return rows
}
