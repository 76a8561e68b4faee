package history

import (
	"math"
	"time"

	"github.com/google/uuid"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// Record is what the operator reads of a finished NodeMaintenance: its name,
// UID and resourceVersion (retention deletes on them), its creation and
// finish times (retention orders and ages by them, cooldowns count from
// them), its node, source and policy, its phase, its request id and
// the boot it was raised in (a request raised on the node is recorded once,
// and so many per boot), and the value a Prometheus policy saw (the
// policy's outcomes). The rest says how the reboot went to a person, who
// reads it from the API server.
//
// A record whose body does not fit the Go type (see
// v1alpha1.NodeMaintenance.Unreadable) is kept as it was decoded: its
// metadata and why it cannot be read. Such records are rare.
type Record struct {
	Name            string
	ResourceVersion string
	Node            string
	Policy          string
	Source          v1alpha1.Source
	Phase           v1alpha1.Phase
	Value           string
	// uid, requestID and bootLabel are the record's UID, request id and
	// boot id label, each nearly always a UUID (compactID).
	uid, requestID, bootLabel compactID
	// odd holds those that are not UUIDs in their canonical form; nil when
	// none is.
	odd *oddIDs
	// unreadable is the whole object, for one that cannot be read.
	unreadable *v1alpha1.NodeMaintenance
	// Unix seconds (the API carries times to the second); noTime for none.
	Created, Succeeded, Failed int64
}

// noTime stands for a time the record does not have.
const noTime = math.MinInt64

// newRecord makes the Record of nm, its strings shared through intern.
func newRecord(nm *v1alpha1.NodeMaintenance, intern func(string) string) *Record {
	r := &Record{
		Name:            nm.Name,
		ResourceVersion: nm.ResourceVersion,
		Created:         unixOf(&nm.CreationTimestamp),
		Succeeded:       noTime,
		Failed:          noTime,
	}
	r.setIDs(string(nm.UID), "", "")
	if nm.Unreadable() != nil {
		r.unreadable = nm
		return r
	}
	r.Node = intern(nm.Spec.NodeName)
	r.Policy = intern(nm.Spec.Policy)
	r.Source = v1alpha1.Source(intern(string(nm.Spec.Source)))
	r.Phase = v1alpha1.Phase(intern(string(nm.Status.Phase)))
	r.setIDs(string(nm.UID), nm.RequestID(), nm.Labels[v1alpha1.BootIDLabel])
	r.Value = nm.Annotations[v1alpha1.ValueAnnotation]
	r.Succeeded = unixOf(nm.Status.PhaseTimes.Succeeded)
	r.Failed = unixOf(nm.Status.PhaseTimes.Failed)
	return r
}

// Into writes the record into nm as the NodeMaintenance it stands for, with
// only the fields the record keeps.
func (r *Record) Into(nm *v1alpha1.NodeMaintenance) {
	if r.unreadable != nil {
		r.unreadable.DeepCopyInto(nm)
		return
	}
	*nm = v1alpha1.NodeMaintenance{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "NodeMaintenance"},
		ObjectMeta: metav1.ObjectMeta{
			Name:              r.Name,
			UID:               types.UID(r.uid.string(r.odd, oddUID)),
			ResourceVersion:   r.ResourceVersion,
			CreationTimestamp: *timeOf(r.Created),
		},
	}
	if boot := r.bootLabel.string(r.odd, oddBoot); boot != "" {
		nm.Labels = map[string]string{v1alpha1.BootIDLabel: boot}
	}
	if r.Value != "" {
		nm.Annotations = map[string]string{v1alpha1.ValueAnnotation: r.Value}
	}
	nm.Spec = v1alpha1.NodeMaintenanceSpec{NodeName: r.Node, Policy: r.Policy, Source: r.Source}
	nm.Status.Phase = r.Phase
	nm.Status.RequestID = r.requestID.string(r.odd, oddRequest)
	if r.Succeeded != noTime {
		nm.Status.PhaseTimes.Succeeded = timeOf(r.Succeeded)
	}
	if r.Failed != noTime {
		nm.Status.PhaseTimes.Failed = timeOf(r.Failed)
	}
}

// compactID is a string the API server holds that is nearly always a UUID
// in its canonical form (a UID, a request id, a boot id), kept as its 16
// bytes: 16 bytes of a record where the string took 64 (its header and 48
// bytes of heap). A year of history at 5000 nodes is 60,000 records and
// three of these each: about 8 MB of the operator's heap, against 19.7 MB
// for the whole history before. Zero stands for the empty string.
type compactID [16]byte

// compact returns s as a compactID, and false when s is not a UUID in its
// canonical form (or is the nil UUID, which zero could not tell from "").
func compact(s string) (compactID, bool) {
	if s == "" {
		return compactID{}, true
	}
	u, err := uuid.Parse(s)
	if err != nil || u == uuid.Nil || u.String() != s {
		return compactID{}, false
	}
	return compactID(u), true
}

// oddIDs holds a record's ids that are not UUIDs in their canonical form.
type oddIDs [3]string

const (
	oddUID = iota
	oddRequest
	oddBoot
)

// string returns the id: from odd[slot] when it is there.
func (c compactID) string(odd *oddIDs, slot int) string {
	if odd != nil && odd[slot] != "" {
		return odd[slot]
	}
	if c == (compactID{}) {
		return ""
	}
	return uuid.UUID(c).String()
}

// setIDs keeps the record's ids, compact where they are UUIDs.
func (r *Record) setIDs(uid, requestID, bootLabel string) {
	r.odd = nil
	for slot, pair := range []struct {
		s  string
		to *compactID
	}{{uid, &r.uid}, {requestID, &r.requestID}, {bootLabel, &r.bootLabel}} {
		c, ok := compact(pair.s)
		*pair.to = c
		if !ok {
			if r.odd == nil {
				r.odd = &oddIDs{}
			}
			r.odd[slot] = pair.s
		}
	}
}

// Readable says whether the record's body could be decoded; when it could
// not, only its name, UID, resourceVersion and creation time are known.
func (r *Record) Readable() bool { return r.unreadable == nil }

func unixOf(t *metav1.Time) int64 {
	if t == nil || t.IsZero() {
		return noTime
	}
	return t.Unix()
}

func timeOf(sec int64) *metav1.Time {
	if sec == noTime {
		return &metav1.Time{}
	}
	t := metav1.NewTime(time.Unix(sec, 0))
	return &t
}
