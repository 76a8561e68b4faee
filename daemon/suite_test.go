package daemon_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/testbed"
)

var bed *testbed.Bed

func TestMain(m *testing.M) {
	harness.MaybeRunDaemon()
	os.Exit(harness.Main(m, &bed))
}

const timeout = 30 * time.Second

func getNode(g Gomega, name string) *corev1.Node { return harness.GetNode(g, bed, name) }

// requested reads the node's reboot-requested annotation.
func requested(g Gomega, name string) protocol.Requested {
	var r protocol.Requested
	_, err := protocol.Decode(getNode(g, name), protocol.RebootRequested, &r)
	g.Expect(err).NotTo(HaveOccurred())
	return r
}

// approve approves bootID as the gate does: with the admission of that boot
// beside it.
func approve(g Gomega, name, bootID string) {
	n := getNode(g, name)
	admission := protocol.Encode(protocol.Admission{BootID: bootID, Time: time.Now()})
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		protocol.Admitted: admission, protocol.RebootApproved: bootID}}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(bed.Client.Patch(context.Background(), n, rawMerge(patch))).To(Succeed())
}
