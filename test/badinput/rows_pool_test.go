package badinput

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

const poolSurface = "MaintenancePool"

// poolSpec is a valid pool spec selecting no node of the matrix.
func poolSpec(kv ...any) map[string]any {
	base := map[string]any{"nodeSelector": map[string]any{"matchLabels": map[string]any{poolLabel: "none"}}}
	return with(base, kv...)
}

func windowSpec(kv ...any) map[string]any {
	return with(map[string]any{"schedule": "0 2 * * *", "duration": "4h"}, kv...)
}

func drainSpec(kv ...any) map[string]any { return with(map[string]any{}, kv...) }

func expr(key, op string, values ...any) map[string]any {
	e := map[string]any{"key": key, "operator": op}
	if values != nil {
		e["values"] = values
	}
	return e
}

func selectorOf(exprs ...any) map[string]any {
	return map[string]any{"matchExpressions": exprs}
}

func poolRows() []row {
	refuse := func(name, field string, spec map[string]any) row {
		return refusedSpec(poolSurface, name, "MaintenancePool", field, spec)
	}
	many := func(n int, item any) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = item
		}
		return out
	}
	rows := []row{
		refuse("maxUnavailable -1", "spec.maxUnavailable", poolSpec("maxUnavailable", -1)),
		refuse("maxUnavailable past int32", "spec.maxUnavailable", poolSpec("maxUnavailable", int64(10000000000))),
		refuse("maxUnavailable 2^31", "spec.maxUnavailable", poolSpec("maxUnavailable", int64(1)<<31)),
		refuse("maxUnavailable past int64", "spec.maxUnavailable", poolSpec("maxUnavailable", 1e19)),
		refuse("maxUnavailable 1.5", "spec.maxUnavailable", poolSpec("maxUnavailable", 1.5)),
		refuse("maxUnavailable true", "spec.maxUnavailable", poolSpec("maxUnavailable", true)),
		refuse("maxUnavailable 150%", "spec.maxUnavailable", poolSpec("maxUnavailable", "150%")),
		refuse("maxUnavailable -5%", "spec.maxUnavailable", poolSpec("maxUnavailable", "-5%")),
		refuse("maxUnavailable abc", "spec.maxUnavailable", poolSpec("maxUnavailable", "abc")),
		refuse("maxUnavailable 10 as a string", "spec.maxUnavailable", poolSpec("maxUnavailable", "10")),
		refuse("no nodeSelector", "spec.nodeSelector", map[string]any{"maxUnavailable": 1}),
		refuse("selector operator Equals", "spec.nodeSelector", poolSpec("nodeSelector", selectorOf(expr("a", "Equals", "b")))),
		refuse("selector In without values", "spec.nodeSelector", poolSpec("nodeSelector", selectorOf(expr("a", "In")))),
		refuse("selector Exists with values", "spec.nodeSelector", poolSpec("nodeSelector", selectorOf(expr("a", "Exists", "b")))),
		refuse("selector bad key", "spec.nodeSelector", poolSpec("nodeSelector", selectorOf(expr("not a key!", "Exists")))),
		refuse("selector bad value", "spec.nodeSelector", poolSpec("nodeSelector", map[string]any{"matchLabels": map[string]any{"a": "not a value!"}})),
		refuse("window duration 10x", "spec.windows[0].duration", poolSpec("windows", []any{windowSpec("duration", "10x")})),
		refuse("window duration -1h", "spec.windows[0].duration", poolSpec("windows", []any{windowSpec("duration", "-1h")})),
		refuse("window duration 0s", "spec.windows[0].duration", poolSpec("windows", []any{windowSpec("duration", "0s")})),
		refuse("window without schedule", "spec.windows[0].schedule", poolSpec("windows", []any{windowSpec("schedule", nil)})),
		refuse("window schedule empty", "spec.windows[0].schedule", poolSpec("windows", []any{windowSpec("schedule", "")})),
		refuse("window schedule of 200 characters", "spec.windows[0].schedule", poolSpec("windows", []any{windowSpec("schedule", strings.Repeat("1", 200))})),
		refuse("window time zone of 100 characters", "spec.windows[0].timeZone", poolSpec("windows", []any{windowSpec("timeZone", strings.Repeat("a", 100))})),
		refuse("33 windows", "spec.windows", poolSpec("windows", many(33, windowSpec()))),
		refuse("drain timeout 0s", "spec.drain.timeout", poolSpec("drain", drainSpec("timeout", "0s"))),
		refuse("drain timeout bogus", "spec.drain.timeout", poolSpec("drain", drainSpec("timeout", "bogus"))),
		refuse("drain grace period 2^40", "spec.drain.gracePeriodSeconds", poolSpec("drain", drainSpec("gracePeriodSeconds", int64(1)<<40))),
		refuse("drain grace period -1", "spec.drain.gracePeriodSeconds", poolSpec("drain", drainSpec("gracePeriodSeconds", -1))),
		refuse("drain pod selector of 2000 characters", "spec.drain.podSelector", poolSpec("drain", drainSpec("podSelector", strings.Repeat("a", 2000)))),
		refuse("desiredConfig with a space", "spec.desiredConfig", poolSpec("desiredConfig", "os 1.2")),
		refuse("desiredConfig of 254 characters", "spec.desiredConfig", poolSpec("desiredConfig", strings.Repeat("a", 254))),
		refuse("desiredConfig with a newline", "spec.desiredConfig", poolSpec("desiredConfig", "v1\nv2")),
		refuse("17 blocking queries", "spec.blockingQueries", poolSpec("blockingQueries", many(17, map[string]any{"name": "q", "query": "up"}))),
		refuse("blocking query without a name", "spec.blockingQueries[0].name", poolSpec("blockingQueries", []any{map[string]any{"query": "up"}})),
		refuse("blocking query empty", "spec.blockingQueries[0].query", poolSpec("blockingQueries", []any{map[string]any{"name": "q", "query": ""}})),
		refuse("blocking query of 5000 characters", "spec.blockingQueries[0].query", poolSpec("blockingQueries", []any{map[string]any{"name": "q", "query": strings.Repeat("u", 5000)}})),
		refuse("paused yes", "spec.paused", poolSpec("paused", "yes")),
		refuse("podOptOuts maxHold 0s", "spec.podOptOuts.maxHold", poolSpec("podOptOuts", map[string]any{"maxHold": "0s"})),
		refuse("podOptOuts maxHold of two years", "spec.podOptOuts.maxHold", poolSpec("podOptOuts", map[string]any{"maxHold": "17520h"})),
		refuse("podOptOuts maxHold bogus", "spec.podOptOuts.maxHold", poolSpec("podOptOuts", map[string]any{"maxHold": "a while"})),
		refuse("podOptOuts afterMaxHold Evict", "spec.podOptOuts.afterMaxHold", poolSpec("podOptOuts", map[string]any{"afterMaxHold": "Evict"})),
		refuse("podOptOuts namespaces empty", "spec.podOptOuts.namespaces", poolSpec("podOptOuts", map[string]any{"namespaces": []any{}})),
		refuse("podOptOuts namespace not a name", "spec.podOptOuts.namespaces[0]", poolSpec("podOptOuts", map[string]any{"namespaces": []any{"Not_A_Namespace"}})),
		refuse("hook of both kinds", "spec.hooks.beforeDrain[0]", poolSpec("hooks", map[string]any{"beforeDrain": []any{
			map[string]any{"name": "h", "acknowledgement": map[string]any{}, "job": map[string]any{"template": map[string]any{}}}}})),
		refuse("hook of no kind", "spec.hooks.beforeReboot[0]", poolSpec("hooks", map[string]any{"beforeReboot": []any{map[string]any{"name": "h"}}})),
		refuse("hook named with a slash", "spec.hooks.afterReboot[0].name", poolSpec("hooks", map[string]any{"afterReboot": []any{ackHook("a/b")}})),
		refuse("hook named with 64 characters", "spec.hooks.afterReboot[0].name", poolSpec("hooks", map[string]any{"afterReboot": []any{ackHook(strings.Repeat("a", 64))}})),
		refuse("two hooks of one name", "spec.hooks.beforeDrain[1]", poolSpec("hooks", map[string]any{"beforeDrain": []any{ackHook("h"), ackHook("h")}})),
		refuse("9 hooks at a point", "spec.hooks.beforeDrain", poolSpec("hooks", map[string]any{"beforeDrain": func() []any {
			out := make([]any, 9)
			for i := range out {
				out[i] = ackHook(fmt.Sprintf("h%d", i))
			}
			return out
		}()})),
		refuse("hook timeout of a second", "spec.hooks.beforeDrain[0].timeout", poolSpec("hooks", map[string]any{"beforeDrain": []any{withField(ackHook("h"), "timeout", "1s")}})),
		refuse("hook timeout of two days", "spec.hooks.beforeDrain[0].timeout", poolSpec("hooks", map[string]any{"beforeDrain": []any{withField(ackHook("h"), "timeout", "48h")}})),
		refuse("hook onFailure Ignore", "spec.hooks.beforeDrain[0].onFailure", poolSpec("hooks", map[string]any{"beforeDrain": []any{withField(ackHook("h"), "onFailure", "Ignore")}})),
		refuse("hook retries 2^40", "spec.hooks.beforeDrain[0].retries", poolSpec("hooks", map[string]any{"beforeDrain": []any{withField(ackHook("h"), "retries", int64(1)<<40)}})),
		refuse("hook retries 11", "spec.hooks.beforeDrain[0].retries", poolSpec("hooks", map[string]any{"beforeDrain": []any{withField(ackHook("h"), "retries", 11)}})),
		refuse("hook Job without a template", "spec.hooks.beforeReboot[0].job.template", poolSpec("hooks", map[string]any{"beforeReboot": []any{map[string]any{"name": "h", "job": map[string]any{}}}})),
		refuse("hook Job naming a service account", "spec.hooks.beforeReboot[0].job.template.spec.serviceAccountName",
			poolSpec("hooks", map[string]any{"beforeReboot": []any{jobHookNaming("serviceAccountName", "cluster-admin-sa")}})),
		refuse("hook Job naming a service account the deprecated way", "spec.hooks.afterReboot[0].job.template.spec.serviceAccount",
			poolSpec("hooks", map[string]any{"afterReboot": []any{jobHookNaming("serviceAccount", "cluster-admin-sa")}})),
		refuse("podOptOuts 65 namespaces", "spec.podOptOuts.namespaces", poolSpec("podOptOuts", map[string]any{"namespaces": func() []any {
			out := make([]any, 65)
			for i := range out {
				out[i] = fmt.Sprintf("ns-%d", i)
			}
			return out
		}()})),
	}

	// Schedules the API server cannot judge reach the operator, which
	// refuses to read any window of the pool: nothing is admitted in it.
	invalidWindow := func(name string, window map[string]any) row {
		return row{
			surface: poolSurface,
			name:    name,
			send: func(t *testing.T, _ *env) (shown, error) {
				u, err := createRow(t, "MaintenancePool", name, poolSpec("windows", []any{window}))
				if err != nil {
					return nil, err
				}
				return poolConditions(u.GetName()), nil
			},
			want: containedAs(v1alpha1.InvalidWindowReason),
		}
	}
	rows = append(rows,
		invalidWindow("window @every 1s", windowSpec("schedule", "@every 1s")),
		invalidWindow("window @daily", windowSpec("schedule", "@daily")),
		invalidWindow("window on February 30", windowSpec("schedule", "0 3 30 2 *")),
		invalidWindow("window with a CRON_TZ prefix", windowSpec("schedule", "CRON_TZ=Asia/Tokyo 0 2 * * *")),
		invalidWindow("window in time zone Local", windowSpec("timeZone", "Local")),
		invalidWindow("window in an unknown time zone", windowSpec("timeZone", "Mars/Olympus_Mons")),
		invalidWindow("window at minute 61", windowSpec("schedule", "61 * * * *")),
		invalidWindow("window with six fields", windowSpec("schedule", "0 0 2 * * *")),
	)

	// Silences: the API server refuses what it can judge (counts, sizes,
	// names, the enum and the bounds); the operator refuses sets that
	// cannot silence one node, and the pool admits nothing.
	set := func(name string, matchers ...any) map[string]any {
		return map[string]any{"name": name, "matchers": matchers}
	}
	silencesOf := func(kv ...any) map[string]any {
		return poolSpec("silences", with(map[string]any{"sets": []any{set("node", `node="{{ .Node }}"`)}}, kv...))
	}
	rows = append(rows,
		refuse("silences without sets", "spec.silences.sets", silencesOf("sets", []any{})),
		refuse("silences with 9 sets", "spec.silences.sets", silencesOf("sets", func() []any {
			out := make([]any, 9)
			for i := range out {
				out[i] = set(fmt.Sprintf("s%d", i), `node="{{ .Node }}"`)
			}
			return out
		}())),
		refuse("silence set with 17 matchers", "spec.silences.sets[0].matchers", silencesOf("sets", []any{set("s", many(17, `node="{{ .Node }}"`)...)})),
		refuse("silence set without matchers", "spec.silences.sets[0].matchers", silencesOf("sets", []any{set("s")})),
		refuse("silence matcher of 513 bytes", "spec.silences.sets[0].matchers[0]", silencesOf("sets", []any{set("s", `node="`+strings.Repeat("a", 506)+`"`)})),
		refuse("silence set named with a slash", "spec.silences.sets[0].name", silencesOf("sets", []any{set("a/b", `node="{{ .Node }}"`)})),
		refuse("two silence sets of one name", "spec.silences.sets[1]", silencesOf("sets", []any{set("s", `node="{{ .Node }}"`), set("s", `instance="{{ .Node }}"`)})),
		refuse("silences onUnreachable Maybe", "spec.silences.onUnreachable", silencesOf("onUnreachable", "Maybe")),
		refuse("silences maxDuration 5m", "spec.silences.maxDuration", silencesOf("maxDuration", "5m")),
		refuse("silences maxDuration 48h", "spec.silences.maxDuration", silencesOf("maxDuration", "48h")),
		refuse("silences maxDuration bogus", "spec.silences.maxDuration", silencesOf("maxDuration", "a while")),
	)
	rows = append(rows,
		refuse("controlPlane etcdNamespace not a name", "spec.controlPlane.etcdNamespace", poolSpec("controlPlane", map[string]any{"etcdNamespace": "Kube_System"})),
		refuse("controlPlane etcdNamespace of 64 characters", "spec.controlPlane.etcdNamespace", poolSpec("controlPlane", map[string]any{"etcdNamespace": strings.Repeat("a", 64)})),
		refuse("controlPlane etcdSelector with 17 labels", "spec.controlPlane.etcdSelector.matchLabels", poolSpec("controlPlane", map[string]any{"etcdSelector": map[string]any{"matchLabels": func() map[string]any {
			m := map[string]any{}
			for i := range 17 {
				m[fmt.Sprintf("k%d", i)] = "v"
			}
			return m
		}()}})),
		refuse("controlPlane etcdSelector operator Equals", "spec.controlPlane.etcdSelector.matchExpressions[0].operator", poolSpec("controlPlane", map[string]any{"etcdSelector": map[string]any{"matchExpressions": []any{expr("component", "Equals", "etcd")}}})),
	)
	invalidSilences := func(name string, matchers ...any) row {
		return row{
			surface: poolSurface,
			name:    name,
			send: func(t *testing.T, _ *env) (shown, error) {
				u, err := createRow(t, "MaintenancePool", name, silencesOf("sets", []any{set("s", matchers...)}))
				if err != nil {
					return nil, err
				}
				return poolConditions(u.GetName()), nil
			},
			want: containedAs(v1alpha1.InvalidSilencesReason),
		}
	}
	rows = append(rows,
		invalidSilences("silence set not by the node", `alertname="KubeNodeNotReady"`),
		invalidSilences("silence set only excluding the node", `node!="{{ .Node }}"`),
		invalidSilences("silence regex that matches nothing too", `node=~"({{ .Node }})?"`),
		invalidSilences("silence matcher not PromQL", `node == {{ .Node }}`),
		invalidSilences("silence template other than the node", `node="{{ .Node }}"`, `pool="{{ .Pool }}"`),
		invalidSilences("silence template calling a function", `node="{{ printf "%s" .Node }}"`),
		invalidSilences("silence regex that does not compile", `node=~"{{ .Node }}(("`),
	)

	// A pool selecting nodes another pool has: they belong to neither, and
	// both pools say so.
	rows = append(rows, row{
		surface: poolSurface,
		name:    "pool overlapping another",
		send: func(t *testing.T, _ *env) (shown, error) {
			u, err := createRow(t, "MaintenancePool", "pool overlapping another",
				poolSpec("nodeSelector", map[string]any{"matchLabels": map[string]any{poolLabel: "open"}}))
			if err != nil {
				return nil, err
			}
			return poolConditions(u.GetName()), nil
		},
		want: containedAs(v1alpha1.NodesInOtherPoolsReason),
	})
	return rows
}

// jobHookNaming is a Job hook whose pod spec sets field to value.
func jobHookNaming(field string, value any) map[string]any {
	return map[string]any{"name": "h", "job": map[string]any{"template": map[string]any{"spec": map[string]any{
		field: value, "containers": []any{map[string]any{"name": "work", "image": "registry.example/hook:1"}},
	}}}}
}

// ackHook is a hook another controller acknowledges.
func ackHook(name string) map[string]any {
	return map[string]any{"name": name, "acknowledgement": map[string]any{}}
}

// withField returns m with one more field.
func withField(m map[string]any, key string, value any) map[string]any {
	m[key] = value
	return m
}
