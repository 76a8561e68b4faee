package statuspatch

import (
	"encoding/json"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Apply is a server-side apply of the part of an object's status that one
// controller owns, made with its own field manager (FieldOwner): the
// fields named in Fields (all of the status type's but Leave's when Fields
// is empty) and, in status.conditions (a list keyed by type), the
// conditions of the types named in Conditions. The API server keeps each
// controller's part apart, so two controllers writing one status never
// undo each other's writes and need no lock: a field this controller owns
// and leaves empty is removed, one it does not own is never touched, and
// managedFields say who wrote what.
//
// A field of its part that the object holds though the apply left it out
// was written by someone else (an operator before these patches, a person
// editing the status): Leftovers removes it.
type Apply struct {
	// Kind is the object's; a typed object read from a cache has none.
	Kind       schema.GroupVersionKind
	Fields     []string
	Leave      []string
	Conditions []string
	// Lock applies only to the version of the object the part was read
	// with (a conflict otherwise): for a controller that announces what it
	// writes from what the cache shows, so that a cache behind its last
	// write does not announce it twice.
	Lock bool
}

var _ client.Patch = Apply{}

// Type implements client.Patch.
func (Apply) Type() types.PatchType { return types.ApplyPatchType }

// Data implements client.Patch: the object's name and UID (an object
// deleted and made again under the name is not written), its
// resourceVersion with Lock, and its part of the status.
func (p Apply) Data(obj client.Object) ([]byte, error) {
	status, err := statusOf(obj)
	if err != nil {
		return nil, err
	}
	meta := map[string]any{"name": obj.GetName(), "uid": string(obj.GetUID())}
	if p.Lock {
		meta["resourceVersion"] = obj.GetResourceVersion()
	}
	return json.Marshal(map[string]any{
		"apiVersion": p.Kind.GroupVersion().String(),
		"kind":       p.Kind.Kind,
		"metadata":   meta,
		"status":     p.part(obj, status),
	})
}

// Part is the controller's part of the object's status, as Data writes it.
func (p Apply) Part(obj client.Object) (map[string]any, error) {
	status, err := statusOf(obj)
	if err != nil {
		return nil, err
	}
	return p.part(obj, status), nil
}

// Leftovers is a JSON patch that removes from the stored object what is of
// the controller's part but was not in what it applied (applied, its
// Part), each removal tested against the value it removes; nil when there
// is nothing to remove.
func (p Apply) Leftovers(stored client.Object, applied map[string]any) (client.Patch, error) {
	status, err := statusOf(stored)
	if err != nil {
		return nil, err
	}
	type op struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value any    `json:"value,omitempty"`
	}
	var ops []op
	for _, key := range p.owned(stored) {
		if _, ok := applied[key]; !ok && status[key] != nil {
			ops = append(ops, op{Op: "test", Path: "/status/" + key, Value: status[key]}, op{Op: "remove", Path: "/status/" + key})
		}
	}
	if len(p.Conditions) > 0 {
		have, _ := status["conditions"].([]any)
		want := conditionTypes(applied["conditions"])
		// From the last, so that each index holds while the ones after it go.
		for i := len(have) - 1; i >= 0; i-- {
			t := conditionTypes([]any{have[i]})
			if len(t) == 1 && slices.Contains(p.Conditions, t[0]) && !slices.Contains(want, t[0]) {
				path := fmt.Sprintf("/status/conditions/%d", i)
				ops = append(ops, op{Op: "test", Path: path + "/type", Value: t[0]}, op{Op: "remove", Path: path})
			}
		}
	}
	if len(ops) == 0 {
		return nil, nil
	}
	data, err := json.Marshal(ops)
	if err != nil {
		return nil, fmt.Errorf("leftovers patch of %s: %w", stored.GetName(), err)
	}
	return client.RawPatch(types.JSONPatchType, data), nil
}

// part is the controller's part of status, the object's whole status.
func (p Apply) part(obj client.Object, status map[string]any) map[string]any {
	part := map[string]any{}
	for _, key := range p.owned(obj) {
		if v, ok := status[key]; ok {
			part[key] = v
		}
	}
	if len(p.Conditions) > 0 {
		var mine []any
		all, _ := status["conditions"].([]any)
		for _, c := range all {
			if t := conditionTypes([]any{c}); len(t) == 1 && slices.Contains(p.Conditions, t[0]) {
				mine = append(mine, c)
			}
		}
		if len(mine) > 0 {
			part["conditions"] = mine
		}
	}
	return part
}

// owned are the status fields of the controller's part, but conditions,
// which are owned by type when Conditions names some.
func (p Apply) owned(obj client.Object) []string {
	fields := p.Fields
	if len(fields) == 0 {
		fields = slices.DeleteFunc(statusFields(obj), func(f string) bool { return slices.Contains(p.Leave, f) })
	}
	if len(p.Conditions) > 0 {
		fields = slices.DeleteFunc(slices.Clone(fields), func(f string) bool { return f == "conditions" })
	}
	return fields
}

// statusOf is the object's status as JSON would hold it.
func statusOf(obj client.Object) (map[string]any, error) {
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("status of %T: %w", obj, err)
	}
	var whole struct {
		Status map[string]any `json:"status"`
	}
	if err := json.Unmarshal(raw, &whole); err != nil {
		return nil, fmt.Errorf("status of %T: %w", obj, err)
	}
	if whole.Status == nil {
		whole.Status = map[string]any{}
	}
	return whole.Status, nil
}

// conditionTypes are the types of the conditions in list (a JSON list).
func conditionTypes(list any) []string {
	items, _ := list.([]any)
	var types []string
	for _, c := range items {
		if m, ok := c.(map[string]any); ok {
			if t, ok := m["type"].(string); ok {
				types = append(types, t)
			}
		}
	}
	return types
}
