package protocol_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/test/gen"
)

// A node waits for its next drain attempt only while the retry is of its
// boot, it is not admitted, and the time is believable: a hand-written time
// years ahead does not hold the node forever.
func TestBackingOff(t *testing.T) {
	now := time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)
	retry := func(boot string, next time.Time) gen.NodeOption {
		return gen.Annotations(protocol.DrainRetry, protocol.Encode(protocol.DrainRetrying{BootID: boot, Attempts: 1, MaxAttempts: 3, NextAt: next}))
	}
	for name, tc := range map[string]struct {
		opts []gen.NodeOption
		want bool
	}{
		"waiting":              {opts: []gen.NodeOption{retry("boot-0", now.Add(time.Minute))}, want: true},
		"waited enough":        {opts: []gen.NodeOption{retry("boot-0", now)}},
		"another boot's retry": {opts: []gen.NodeOption{retry("boot-old", now.Add(time.Minute))}},
		"years ahead":          {opts: []gen.NodeOption{retry("boot-0", now.Add(24*365*time.Hour))}},
		"the longest backoff":  {opts: []gen.NodeOption{retry("boot-0", now.Add(24*time.Hour))}, want: true},
		"none":                 {},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			st, err := protocol.Read(gen.Node("n", append([]gen.NodeOption{gen.BootID("boot-0")}, tc.opts...)...))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(st.BackingOff(now)).To(Equal(tc.want))
		})
	}
}

// A malformed retry, forced-drain or marks record makes the node
// unreadable, like any kmaint annotation: nothing is done to it.
func TestMalformedDrainEndAnnotationsAreUnreadable(t *testing.T) {
	for _, key := range []string{protocol.DrainRetry, protocol.DrainForced, protocol.NodeMarks} {
		g := NewWithT(t)
		_, err := protocol.Read(gen.Node("n", gen.Annotations(key, "{not json")))
		g.Expect(err).To(MatchError(ContainSubstring(key)))
	}
}

// A forced drain of a node running many pods names the first ones and
// counts the rest, so that its record stays readable.
func TestDrainForcingNamesAtMostItsShare(t *testing.T) {
	g := NewWithT(t)
	var f protocol.DrainForcing
	var pods []string
	for i := range 1000 {
		pods = append(pods, fmt.Sprintf("%s/%s-%d", strings.Repeat("n", 63), strings.Repeat("p", 240), i))
	}
	f.AddPods(pods)
	f.AddPods(pods[:10]) // recorded again after a failed pass: not counted twice
	g.Expect(f.Pods).To(HaveLen(protocol.MaxForcedPodNames))
	g.Expect(f.MorePods).To(Equal(1000 - protocol.MaxForcedPodNames))
	g.Expect(len(protocol.Encode(f))).To(BeNumerically("<", protocol.MaxAnnotationLength))
	g.Expect(f.Message("n")).To(ContainSubstring("1000 pods deleted"))
	g.Expect(f.Message("n")).To(HaveSuffix("and 900 more; the node reboots anyway"))
}
