package harness

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// StatusOwners reads which field manager owns each field of an object's
// status (its managedFields of the status subresource), and returns the
// fields more than one manager owns, each with its managers, as
// "path: manager/operation, ..." lines; none when every field has one
// writer. Only the managers named count, when some are.
func StatusOwners(obj metav1.Object, managers ...string) ([]string, error) {
	type owner struct {
		name string
		set  *fieldpath.Set
	}
	var owners []owner
	for _, e := range obj.GetManagedFields() {
		if e.Subresource != "status" || e.FieldsV1 == nil || len(managers) > 0 && !slices.Contains(managers, e.Manager) {
			continue
		}
		set := &fieldpath.Set{}
		if err := set.FromJSON(strings.NewReader(string(e.FieldsV1.Raw))); err != nil {
			return nil, fmt.Errorf("managedFields of %s by %s: %w", obj.GetName(), e.Manager, err)
		}
		owners = append(owners, owner{name: e.Manager + "/" + string(e.Operation), set: set})
	}
	shared := map[string][]string{}
	for i := range owners {
		for j := i + 1; j < len(owners); j++ {
			both := owners[i].set.Intersection(owners[j].set)
			both.Iterate(func(p fieldpath.Path) {
				k := p.String()
				for _, n := range []string{owners[i].name, owners[j].name} {
					if !slices.Contains(shared[k], n) {
						shared[k] = append(shared[k], n)
					}
				}
			})
		}
	}
	var out []string
	for path, names := range shared {
		out = append(out, path+": "+strings.Join(names, ", "))
	}
	sort.Strings(out)
	return out, nil
}
