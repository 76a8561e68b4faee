package statuspatch

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Whole is a merge patch of the object's entire status. A patch computed as
// a diff from the old status would leave out counts that are zero in both
// (the API server then stores no value where a person expects a 0), and
// omitempty drops fields that became empty, so Clear names the fields to
// set to null when they are absent: otherwise the last candidate of a list
// would never leave it.
type Whole struct {
	// Clear are the status fields, by their JSON names, that may become
	// empty.
	Clear []string
}

var _ client.Patch = Whole{}

// Type implements client.Patch.
func (Whole) Type() types.PatchType { return types.MergePatchType }

// Data implements client.Patch.
func (w Whole) Data(obj client.Object) ([]byte, error) {
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("status patch of %T: %w", obj, err)
	}
	var whole struct {
		Status map[string]any `json:"status"`
	}
	if err := json.Unmarshal(raw, &whole); err != nil {
		return nil, fmt.Errorf("status patch of %T: %w", obj, err)
	}
	if whole.Status == nil {
		whole.Status = map[string]any{}
	}
	for _, key := range w.Clear {
		if _, ok := whole.Status[key]; !ok {
			whole.Status[key] = nil
		}
	}
	return json.Marshal(map[string]any{"status": whole.Status})
}
