package badinput

import (
	"strings"
	"testing"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// nodeCheck is a valid blocking object check of the node, with kv changed.
func nodeCheck(kv ...any) map[string]any {
	return with(map[string]any{"name": "c", "objects": map[string]any{"node": map[string]any{}}, "expression": "true"}, kv...)
}

// healthObjectCheck is a valid health object check, with kv changed.
func healthObjectCheck(kv ...any) map[string]any {
	return with(map[string]any{"name": "c", "objects": map[string]any{"podsOnNode": map[string]any{}}, "expression": "pods.size() >= 0"}, kv...)
}

func blockingChecks(checks ...any) map[string]any { return poolSpec("blockingQueries", checks) }

func healthChecks(checks ...any) map[string]any {
	return poolSpec("healthChecks", map[string]any{"queries": checks})
}

// objectCheckRows are the rows of the object checks' fields: the schema
// refuses a check of no kind or two, a missing half and lengths past their
// bounds; an expression it cannot judge (one that does not compile, or
// costs past the limit) is accepted and shown on the pool's Degraded
// condition, and holds (the gate's and aftercare's suites show it never
// passes).
func objectCheckRows() []row {
	refuse := func(name, field string, spec map[string]any) row {
		return refusedSpec(poolSurface, name, "MaintenancePool", field, spec)
	}
	rows := []row{
		refuse("blocking check with query and objects", "spec.blockingQueries[0]", blockingChecks(nodeCheck("query", "up"))),
		refuse("blocking check with neither query nor objects", "spec.blockingQueries[0]", blockingChecks(map[string]any{"name": "c"})),
		refuse("blocking check objects without expression", "spec.blockingQueries[0]", blockingChecks(nodeCheck("expression", nil))),
		refuse("blocking check expression without objects", "spec.blockingQueries[0]", blockingChecks(nodeCheck("objects", nil))),
		refuse("blocking check expression empty", "spec.blockingQueries[0].expression", blockingChecks(nodeCheck("expression", ""))),
		refuse("blocking check expression of 5000 characters", "spec.blockingQueries[0].expression", blockingChecks(nodeCheck("expression", strings.Repeat("t", 5000)))),
		refuse("blocking check objects of no kind", "spec.blockingQueries[0].objects", blockingChecks(nodeCheck("objects", map[string]any{}))),
		refuse("blocking check objects of two kinds", "spec.blockingQueries[0].objects", blockingChecks(nodeCheck("objects", map[string]any{
			"node": map[string]any{}, "podsOnNode": map[string]any{}}))),
		refuse("blocking check pods without a namespace", "spec.blockingQueries[0].objects.pods.namespace", blockingChecks(nodeCheck("objects", map[string]any{
			"pods": map[string]any{}}))),
		refuse("blocking check pods namespace not a name", "spec.blockingQueries[0].objects.pods.namespace", blockingChecks(nodeCheck("objects", map[string]any{
			"pods": map[string]any{"namespace": "Not_A_Namespace"}}))),
		refuse("blocking check pods selector operator Equals", "spec.blockingQueries[0].objects.pods.selector", blockingChecks(nodeCheck("objects", map[string]any{
			"pods": map[string]any{"namespace": "db", "selector": selectorOf(expr("app", "Equals", "db"))}}))),
		refuse("health check with query and objects", "spec.healthChecks.queries[0]", healthChecks(healthObjectCheck("query", "up == 0"))),
		refuse("health check objects without expression", "spec.healthChecks.queries[0]", healthChecks(healthObjectCheck("expression", nil))),
		refuse("health check expression of 5000 characters", "spec.healthChecks.queries[0].expression", healthChecks(healthObjectCheck("expression", strings.Repeat("t", 5000)))),
		refuse("health check objects of no kind", "spec.healthChecks.queries[0].objects", healthChecks(healthObjectCheck("objects", map[string]any{}))),
	}

	// Expressions the API server cannot judge reach the operator, which
	// reports them on the pool whatever waits.
	contained := func(name, reason string, spec map[string]any) row {
		return row{
			surface: poolSurface,
			name:    name,
			send: func(t *testing.T, _ *env) (shown, error) {
				u, err := createRow(t, "MaintenancePool", name, spec)
				if err != nil {
					return nil, err
				}
				return poolConditions(u.GetName()), nil
			},
			want: containedAs(reason),
		}
	}
	const costly = `pods.all(a, pods.all(b, pods.all(c, a.metadata.name != c.metadata.name)))`
	rows = append(rows,
		contained("blocking check expression that does not compile", v1alpha1.InvalidObjectCheckReason, blockingChecks(nodeCheck("expression", "node.metadata.name =="))),
		contained("blocking check expression of a variable its kind lacks", v1alpha1.InvalidObjectCheckReason, blockingChecks(nodeCheck("expression", "pods.size() == 0"))),
		contained("blocking check expression that is a string", v1alpha1.InvalidObjectCheckReason, blockingChecks(nodeCheck("expression", "'true'"))),
		contained("blocking check expression costing past the limit", v1alpha1.ObjectCheckCostExceededReason, blockingChecks(nodeCheck(
			"objects", map[string]any{"pods": map[string]any{"namespace": "db"}}, "expression", costly))),
		contained("health check expression that does not compile", v1alpha1.InvalidObjectCheckReason, healthChecks(healthObjectCheck("expression", "pods.all(p,"))),
		contained("health check expression costing past the limit", v1alpha1.ObjectCheckCostExceededReason, healthChecks(healthObjectCheck("expression", costly))),
	)
	return rows
}
