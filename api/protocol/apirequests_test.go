package protocol_test

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/test/gen"
)

func TestReadAPIRequests(t *testing.T) {
	cases := map[string]struct {
		value   *string
		want    []protocol.APIRequest
		known   bool
		wantErr string
	}{
		"absent: nothing known":      {},
		"an empty list: known, none": {value: ptr(`[]`), want: []protocol.APIRequest{}, known: true},
		"named": {value: ptr(`[{"name":"kernel","uid":"u-1"},{"name":"cve","uid":"u-2"}]`),
			want: []protocol.APIRequest{{Name: "kernel", UID: "u-1"}, {Name: "cve", UID: "u-2"}}, known: true},
		"null is not a list":      {value: ptr(`null`), wantErr: "is null, not a list"},
		"malformed":               {value: ptr(`[{"name":`), wantErr: "is malformed"},
		"an entry without a uid":  {value: ptr(`[{"name":"kernel"}]`), wantErr: "without a name or uid"},
		"an entry without a name": {value: ptr(`[{"uid":"u-1"}]`), wantErr: "without a name or uid"},
		"an object, not a list":   {value: ptr(`{"name":"kernel","uid":"u-1"}`), wantErr: "is malformed"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			var opts []gen.NodeOption
			if c.value != nil {
				opts = append(opts, gen.Annotations(protocol.APIRequests, *c.value))
			}
			got, known, err := protocol.ReadAPIRequests(gen.Node("n1", opts...))
			if c.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(c.wantErr)))
				g.Expect(err.Error()).To(ContainSubstring("n1"), "the error names the node")
				g.Expect(known).To(BeFalse(), "an unreadable list tells nothing")
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(known).To(Equal(c.known))
			g.Expect(got).To(Equal(c.want))
		})
	}
}

func ptr(s string) *string { return &s }
