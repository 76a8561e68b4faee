package policies

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestResolveMaxUnavailable(t *testing.T) {
	ptr := func(v intstr.IntOrString) *intstr.IntOrString { return &v }
	cases := map[string]struct {
		maxUnavailable *intstr.IntOrString
		nodes          int
		// want is the node count the budget allows.
		want int
		// wantErr says the value cannot be resolved.
		wantErr bool
	}{
		"unset is 1":                        {maxUnavailable: nil, nodes: 10, want: 1},
		"int 3 of 10":                       {maxUnavailable: ptr(intstr.FromInt32(3)), nodes: 10, want: 3},
		"int above pool size stays":         {maxUnavailable: ptr(intstr.FromInt32(5)), nodes: 2, want: 5},
		"int 0 admits nothing":              {maxUnavailable: ptr(intstr.FromInt32(0)), nodes: 10, want: 0},
		"25% of 10 rounds down":             {maxUnavailable: ptr(intstr.FromString("25%")), nodes: 10, want: 2},
		"5% of 10 is at least 1":            {maxUnavailable: ptr(intstr.FromString("5%")), nodes: 10, want: 1},
		"0% admits nothing":                 {maxUnavailable: ptr(intstr.FromString("0%")), nodes: 10, want: 0},
		"100% of 7":                         {maxUnavailable: ptr(intstr.FromString("100%")), nodes: 7, want: 7},
		"50% of 3 rounds down":              {maxUnavailable: ptr(intstr.FromString("50%")), nodes: 3, want: 1},
		"not a percentage":                  {maxUnavailable: ptr(intstr.FromString("abc")), nodes: 10, wantErr: true},
		"negative int":                      {maxUnavailable: ptr(intstr.FromInt32(-1)), nodes: 10, wantErr: true},
		"percent of an empty pool is 1 yet": {maxUnavailable: ptr(intstr.FromString("10%")), nodes: 0, want: 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := ResolveMaxUnavailable(tc.maxUnavailable, tc.nodes)
			if tc.wantErr {
				g.Expect(err).To(HaveOccurred())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}
}
