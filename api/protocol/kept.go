package protocol

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Kept returns the annotations of node that kmaint reads, as the operator
// keeps them; nil when there are none. key gives the copy of each key to
// keep (the operator's cache shares one between its Nodes); nil keeps the
// node's own.
//
// Anyone who may patch Nodes (many add-ons may) may write 256 KiB of
// annotations on each, and the operator holds every Node: what it keeps
// must not grow with what they write. It keeps
//   - the protocol's annotations (NodeAnnotations), whole: the daemon and
//     the operator write them, and admission lets no one else but a
//     cluster administrator (the opt-out aside);
//   - the node's opt-outs, kmaint's and Karpenter's, cut to what any
//     reader reads of them (CutForeign): they hold the node and are quoted
//     as the whole value is;
//   - the acknowledgements of the hooks the node's record names
//     (HookRecord.Names), cut the same: the gate reads no other (it
//     records a hook before it waits for it) and removes these when the
//     admission ends; a cut one, like the whole one, is longer than any
//     token and opens nothing.
//
// Another key under Prefix is one admission refuses
// (config/admission/operator-annotations-policy.yaml), and kmaint reads
// none. An acknowledgement the record does not name is left on the Node
// by the end of the admission: it was written for no point of it, so its
// token opens nothing.
func Kept(node *corev1.Node, key func(string) string) map[string]string {
	known := NodeAnnotations()
	var rec *HookRecord
	named := func(k string) bool {
		if rec == nil {
			rec = &HookRecord{}
			// One that cannot be read names nothing: Read reports it
			// unreadable, and the gate waits.
			if ok, err := Decode(node, Hook, rec); !ok || err != nil {
				*rec = HookRecord{}
			}
		}
		return rec.Names(strings.TrimPrefix(k, AckPrefix))
	}
	var keep []string
	for k := range node.Annotations {
		switch {
		case strings.HasPrefix(k, Prefix) && slices.Contains(known, k), k == KarpenterDoNotDisrupt,
			strings.HasPrefix(k, AckPrefix) && named(k):
			keep = append(keep, k)
		}
	}
	if len(keep) == 0 {
		return nil
	}
	out := make(map[string]string, len(keep))
	for _, k := range keep {
		v := node.Annotations[k]
		if k == DoNotDisrupt || k == KarpenterDoNotDisrupt || strings.HasPrefix(k, AckPrefix) {
			v = CutForeign(v)
		}
		if key != nil {
			k = key(k)
		}
		out[k] = v
	}
	return out
}
