package badinput

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

const maintenanceSurface = "NodeMaintenance"

// nmSpec is a valid request by a person for the matrix's first open node;
// no daemon runs there, so it is never journaled and never admitted.
func nmSpec(kv ...any) map[string]any {
	return with(map[string]any{"nodeName": openNodes[0], "reason": "bad-input matrix"}, kv...)
}

func maintenanceRows() []row {
	refuse := func(name, field string, spec map[string]any) row {
		return refusedSpec(maintenanceSurface, name, "NodeMaintenance", field, spec)
	}
	rows := []row{
		refuse("no nodeName", "spec.nodeName", nmSpec("nodeName", nil)),
		refuse("empty nodeName", "spec.nodeName", nmSpec("nodeName", "")),
		refuse("nodeName of 254 characters", "spec.nodeName", nmSpec("nodeName", strings.Repeat("n", 254))),
		refuse("no reason", "spec.reason", nmSpec("reason", nil)),
		refuse("empty reason", "spec.reason", nmSpec("reason", "")),
		refuse("reason of 513 bytes", "spec.reason", nmSpec("reason", strings.Repeat("r", 513))),
		refuse("reason of 1 MiB", "spec.reason", nmSpec("reason", strings.Repeat("r", 1<<20-4096))),
		refuse("reason with a newline", "spec.reason", nmSpec("reason", "kernel\nSucceeded: forged line")),
		refuse("reason with a terminal escape", "spec.reason", nmSpec("reason", "\x1b[2J\x1b[31mkernel")),
		refuse("reason with a NUL", "spec.reason", nmSpec("reason", "a\x00b")),
		refuse("reason with a carriage return", "spec.reason", nmSpec("reason", "ok\rFAILED")),
		refuse("source magic", "spec.source", nmSpec("source", "magic")),
		refuse("type Drain", "spec.type", nmSpec("type", "Drain")),
		refuse("policy of 254 characters", "spec.policy", nmSpec("policy", strings.Repeat("p", 254))),
		refuse("ignoreWindows yes", "spec.ignoreWindows", nmSpec("ignoreWindows", "yes")),
		// Sources kmaint sets itself: a person claiming one would pass for
		// a request the node or a policy made.
		refuse("source host by a person", "spec.source", nmSpec("source", "host")),
		refuse("source config by a person", "spec.source", nmSpec("source", "config")),
		refuse("source metric by a person", "spec.source", nmSpec("source", "metric")),
		refuse("source schedule by a person", "spec.source", nmSpec("source", "schedule")),
		refuse("source alert by a person", "spec.source", nmSpec("source", "alert")),
		refuse("source condition by a person", "spec.source", nmSpec("source", "condition")),
		refuse("policy named by a person", "spec.policy", nmSpec("policy", "someone-elses-policy")),
		{
			surface: maintenanceSurface,
			name:    "kmaint's request-id label set by a person",
			send: func(t *testing.T, _ *env) (shown, error) {
				u := object("NodeMaintenance", rowName("nodemaintenance", "request-id label"), nmSpec())
				u.SetLabels(map[string]string{v1alpha1.RequestIDLabel: "forged"})
				if err := bed.Client.Create(context.Background(), u); err != nil {
					return nil, err
				}
				t.Cleanup(func() { _ = bed.Client.Delete(context.Background(), u) })
				return nil, nil
			},
			want: refusedNaming("metadata.labels"),
		},
		updateRow("nodeName changed", "nodeName is immutable", func(s map[string]any) { s["nodeName"] = openNodes[1] }),
		updateRow("source changed", "source is immutable", func(s map[string]any) { s["source"] = "host" }),
		updateRow("type changed", "spec.type", func(s map[string]any) { s["type"] = "Drain" }),
		updateRow("reason changed to a forged line", "spec.reason", func(s map[string]any) { s["reason"] = "x\nPhase: Succeeded" }),
	}

	contain := func(name, reason string, spec map[string]any) row {
		return row{
			surface: maintenanceSurface,
			name:    name,
			send: func(t *testing.T, _ *env) (shown, error) {
				u, err := createRow(t, "NodeMaintenance", name, spec)
				if err != nil {
					return nil, err
				}
				return maintenanceConditions(u.GetName()), nil
			},
			want: containedAs(reason),
		}
	}
	rows = append(rows,
		contain("node that does not exist", v1alpha1.NodeNotFoundReason, nmSpec("nodeName", "no-such-node")),
		contain("node name no node can have", v1alpha1.NodeNotFoundReason, nmSpec("nodeName", "UPPER_case!")),
		row{
			surface: maintenanceSurface,
			name:    "second request for a node with one open",
			send: func(t *testing.T, _ *env) (shown, error) {
				if _, err := createRow(t, "NodeMaintenance", "first of two", nmSpec()); err != nil {
					return nil, err
				}
				u, err := createRow(t, "NodeMaintenance", "second of two", nmSpec())
				if err != nil {
					return nil, err
				}
				return maintenanceConditions(u.GetName()), nil
			},
			want: containedAs(v1alpha1.DuplicateReason),
		},
	)
	return rows
}

// updateRow creates a valid request, then changes its spec as kubectl edit
// would (a merge patch): the API server must refuse it naming says.
func updateRow(name, says string, change func(spec map[string]any)) row {
	return row{
		surface: maintenanceSurface,
		name:    "update: " + name,
		send: func(t *testing.T, _ *env) (shown, error) {
			u, err := createRow(t, "NodeMaintenance", "update "+name, nmSpec("nodeName", openNodes[2]))
			if err != nil {
				t.Fatalf("create the request to update: %v", err)
			}
			spec := map[string]any{}
			change(spec)
			patch, err := json.Marshal(map[string]any{"spec": spec})
			if err != nil {
				t.Fatal(err)
			}
			return nil, bed.Client.Patch(context.Background(), u, client.RawPatch(types.MergePatchType, patch))
		},
		want: refusedNaming(says),
	}
}
