package policies

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// ResolveMaxUnavailable turns a pool's maxUnavailable into a node count for
// a pool of n nodes: unset is 1; a percentage rounds down, but to at least 1
// unless it is 0%, so that a small pool still makes progress.
func ResolveMaxUnavailable(maxUnavailable *intstr.IntOrString, n int) (int, error) {
	if maxUnavailable == nil {
		return 1, nil
	}
	v, err := intstr.GetScaledValueFromIntOrPercent(maxUnavailable, n, false)
	if err != nil {
		return 0, fmt.Errorf("maxUnavailable %q: %w", maxUnavailable.String(), err)
	}
	if v < 0 {
		return 0, fmt.Errorf("maxUnavailable %q is negative", maxUnavailable.String())
	}
	if v == 0 && maxUnavailable.Type == intstr.String && strings.TrimSuffix(maxUnavailable.StrVal, "%") != "0" {
		v = 1
	}
	return v, nil
}
