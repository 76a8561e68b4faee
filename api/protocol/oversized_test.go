package protocol_test

import (
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/gen"
)

// TestReadOversized: a well-formed annotation past MaxAnnotationLength (a
// stolen daemon token's thousand requests) is unreadable, by name and size,
// and fails closed like a malformed one; one just under the limit is read.
func TestReadOversized(t *testing.T) {
	requests := func(n int) string {
		var reqs []string
		for i := range n {
			reqs = append(reqs, fmt.Sprintf(`{"id":"forged-%04d","source":"host","reason":%q,"time":"2025-03-01T02:00:00Z"}`, i, strings.Repeat("r", 400)))
		}
		return `{"bootID":"boot-1","requests":[` + strings.Join(reqs, ",") + `]}`
	}
	big := requests(1000)
	g := NewWithT(t)
	g.Expect(len(big)).To(BeNumerically(">", protocol.MaxAnnotationLength))

	for _, key := range []string{protocol.RebootRequested, protocol.State, protocol.Admitted, protocol.DrainFailed} {
		t.Run(key, func(t *testing.T) {
			g := NewWithT(t)
			value := big
			if key != protocol.RebootRequested {
				value = fmt.Sprintf(`{"bootID":"boot-1","phase":"idle","message":%q}`, strings.Repeat("m", protocol.MaxAnnotationLength))
			}
			st, err := protocol.Read(gen.Node("n", gen.BootID("boot-1"), gen.Approved("boot-0"), gen.Annotations(key, value)))
			g.Expect(err).To(MatchError(ContainSubstring(fmt.Sprintf("annotation %s on node n is %d bytes long; kmaint reads at most %d", key, len(value), protocol.MaxAnnotationLength))))
			g.Expect(st.Unreadable).To(Equal(err))
			g.Expect(st.WantsAdmission()).To(BeFalse(), "never admitted")
			g.Expect(st.RebootDone()).To(BeFalse(), "never taken for rebooted")
			g.Expect(st.Degraded()).To(BeTrue(), "degraded: it needs a person")
		})
	}

	t.Run("a full boot's requests are read", func(t *testing.T) {
		g := NewWithT(t)
		value := requests(4 * v1alpha1.MaxRecordedPerBoot)
		g.Expect(len(value)).To(BeNumerically("<", protocol.MaxAnnotationLength))
		st, err := protocol.Read(gen.Node("n", gen.BootID("boot-1"), gen.Annotations(protocol.RebootRequested, value)))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(st.Current().Requests).To(HaveLen(4 * v1alpha1.MaxRecordedPerBoot))
	})
}
