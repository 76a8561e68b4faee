package operator_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/scheme"
	"github.com/kmaint/kmaint/operator"
	"github.com/kmaint/kmaint/test/shape"
)

// BenchmarkCachedNode reports what one Node costs the operator's cache, in
// heap bytes held: a cloud node as the simulated cluster's realistic mode
// shapes it (shape.RealisticNode) with the annotations kmaint's daemon writes,
// served as protobuf and decoded as the informer does, transformed and
// stored. "stripped" drops only managed fields (the cache's default
// transform), "slim" is what the operator runs on Nodes.
func BenchmarkCachedNode(b *testing.B) {
	const nodes = 5000
	s, err := scheme.New()
	if err != nil {
		b.Fatal(err)
	}
	codecs := serializer.NewCodecFactory(s)
	encoder := codecs.EncoderForVersion(protobuf.NewSerializer(s, s), corev1.SchemeGroupVersion)
	decoder := codecs.UniversalDeserializer()
	raws := make([][]byte, 0, nodes)
	since := time.Now().UTC().Truncate(time.Second)
	for i := range nodes {
		name := fmt.Sprintf("ip-10-%d-%d-%d.ec2.internal", i/62500, i/250%250, i%250)
		boot := uuid.NewString()
		n := shape.RealisticNode(name, fmt.Sprint("pool-", i%20), i, fmt.Sprintf("10.%d.%d.%d", i/62500, i/250%250, i%250), boot)
		n.Annotations[protocol.State] = protocol.Encode(protocol.DaemonState{Phase: protocol.DaemonIdle, BootID: boot, Since: since})
		var buf bytes.Buffer
		if err := encoder.Encode(n, &buf); err != nil {
			b.Fatal(err)
		}
		raws = append(raws, buf.Bytes())
	}
	newStore := func() toolscache.Store { return toolscache.NewStore(toolscache.DeletionHandlingMetaNamespaceKeyFunc) }
	reportHeld(b, raws, decoder, newStore, operator.NodeTransform(), "heap-B/node")
}
