package statuspatch

import (
	"encoding/json"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Whole is a merge patch of the object's entire status. A patch computed as
// a diff from the old status would leave out counts that are zero in both
// (the API server then stores no value where a person expects a 0), and
// omitempty drops fields that became empty: every field of the status type
// that the object leaves out is set to null, so that the last candidate of
// a list, or a cleared record, leaves it. The fields are read from the
// type, so a field added to a status is cleared without a list to keep.
//
// Leave names the status fields (JSON names) that another controller writes:
// they are left out of the patch, neither written nor cleared. Fields that
// cannot be left out, a list of conditions two controllers write, are
// written as the object shows them: with Lock, the patch then applies only
// to the version of the object it was made from (a conflict otherwise), so
// that an old copy never puts back what the other controller changed.
type Whole struct {
	Leave []string
	Lock  bool
}

var _ client.Patch = Whole{}

// Type implements client.Patch.
func (Whole) Type() types.PatchType { return types.MergePatchType }

// Data implements client.Patch.
func (p Whole) Data(obj client.Object) ([]byte, error) {
	status, err := statusOf(obj)
	if err != nil {
		return nil, err
	}
	for _, key := range statusFields(obj) {
		if _, ok := status[key]; !ok {
			status[key] = nil
		}
	}
	for _, key := range p.Leave {
		delete(status, key)
	}
	patch := map[string]any{"status": status}
	if p.Lock {
		patch["metadata"] = map[string]any{"resourceVersion": obj.GetResourceVersion()}
	}
	return json.Marshal(patch)
}

// statusFields are the JSON names of the fields of obj's Status struct;
// none when it has none.
func statusFields(obj client.Object) []string {
	v := reflect.Indirect(reflect.ValueOf(obj))
	if v.Kind() != reflect.Struct {
		return nil
	}
	f, ok := v.Type().FieldByName("Status")
	if !ok || f.Type.Kind() != reflect.Struct {
		return nil
	}
	var names []string
	for field := range f.Type.Fields() {
		name, _, _ := strings.Cut(field.Tag.Get("json"), ",")
		if field.IsExported() && name != "" && name != "-" {
			names = append(names, name)
		}
	}
	return names
}
