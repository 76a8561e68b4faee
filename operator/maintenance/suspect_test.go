package maintenance

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
)

// A request is dated off its record only beyond what a late daemon or a
// clock explains.
func TestDatedOff(t *testing.T) {
	recorded := time.Date(2026, 12, 5, 6, 0, 0, 0, time.UTC)
	at := func(d time.Duration) protocol.Request {
		return protocol.Request{ID: "r", Source: v1alpha1.SourceHost, Time: recorded.Add(d)}
	}
	g := NewWithT(t)
	g.Expect(datedOff(at(-time.Second), recorded)).To(BeEmpty(), "raised a second after it was journaled")
	g.Expect(datedOff(at(-v1alpha1.MaxRequestLead), recorded)).To(BeEmpty(), "raised late, within the lead")
	g.Expect(datedOff(at(v1alpha1.MaxClockSkew), recorded)).To(BeEmpty(), "a node's clock a little ahead")
	g.Expect(datedOff(at(-v1alpha1.MaxRequestLead-time.Second), recorded)).To(ContainSubstring("recorded at 2026-12-05T06:00:00Z"))
	g.Expect(datedOff(protocol.Request{ID: "r", Time: time.Unix(0, 0)}, recorded)).To(ContainSubstring(`"r" at 1970-01-01T00:00:00Z`))
	g.Expect(datedOff(at(v1alpha1.MaxClockSkew+time.Second), recorded)).To(ContainSubstring("recorded before"))
}

// What the daemon wrote reaches the event quoted: an id with a newline or
// a chat mention cannot pass for text of kmaint's.
func TestDatedOffQuotesTheID(t *testing.T) {
	g := NewWithT(t)
	recorded := time.Date(2026, 12, 5, 6, 0, 0, 0, time.UTC)
	msg := datedOff(protocol.Request{ID: "x\n<!channel>", Time: time.Unix(0, 0)}, recorded)
	g.Expect(msg).To(HavePrefix(`"x\n<!channel>" at`))
	g.Expect(msg).NotTo(ContainSubstring("\n"))
}
