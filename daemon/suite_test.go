package daemon_test

import (
	"context"
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

func approve(g Gomega, name, bootID string) {
	n := getNode(g, name)
	patch := []byte(`{"metadata":{"annotations":{"` + protocol.RebootApproved + `":"` + bootID + `"}}}`)
	g.Expect(bed.Client.Patch(context.Background(), n, rawMerge(patch))).To(Succeed())
}
