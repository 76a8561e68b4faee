package history

import (
	"math"
	"strings"
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
	Value           string
	// kind is the record's policy, source and phase, each followed by a
	// NUL (Policy, Source, Phase): few combinations, one string each,
	// shared through intern.
	kind string
	// uid, requestID and bootLabel are the record's UID, request id and
	// boot id label, each nearly always a UUID (compactID).
	uid, requestID, bootLabel compactID
	// rare holds what few records have; nil for most.
	rare *rareParts
	// Unix seconds (the API carries times to the second); noTime for none.
	Created, Succeeded, Failed int64
}

// rareParts is what few records have: ids that are not UUIDs in their
// canonical form, and the whole object of one that cannot be read.
type rareParts struct {
	odd        oddIDs
	unreadable *v1alpha1.NodeMaintenance
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
	if nm.Unreadable() != nil {
		r.setIDs(string(nm.UID), "", "")
		if r.rare == nil {
			r.rare = &rareParts{}
		}
		r.rare.unreadable = nm
		return r
	}
	r.Node = intern(nm.Spec.NodeName)
	r.kind = intern(nm.Spec.Policy + "\x00" + string(nm.Spec.Source) + "\x00" + string(nm.Status.Phase) + "\x00")
	r.setIDs(string(nm.UID), nm.RequestID(), nm.Labels[v1alpha1.BootIDLabel])
	r.Value = nm.Annotations[v1alpha1.ValueAnnotation]
	r.Succeeded = unixOf(nm.Status.PhaseTimes.Succeeded)
	r.Failed = unixOf(nm.Status.PhaseTimes.Failed)
	return r
}

// Into writes the record into nm as the NodeMaintenance it stands for, with
// only the fields the record keeps.
func (r *Record) Into(nm *v1alpha1.NodeMaintenance) {
	if !r.Readable() {
		r.rare.unreadable.DeepCopyInto(nm)
		return
	}
	*nm = v1alpha1.NodeMaintenance{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "NodeMaintenance"},
		ObjectMeta: metav1.ObjectMeta{
			Name:              r.Name,
			UID:               types.UID(r.uid.string(r.rare.oddIDs(), oddUID)),
			ResourceVersion:   r.ResourceVersion,
			CreationTimestamp: *timeOf(r.Created),
		},
	}
	if boot := r.bootLabel.string(r.rare.oddIDs(), oddBoot); boot != "" {
		nm.Labels = map[string]string{v1alpha1.BootIDLabel: boot}
	}
	if r.Value != "" {
		nm.Annotations = map[string]string{v1alpha1.ValueAnnotation: r.Value}
	}
	nm.Spec = v1alpha1.NodeMaintenanceSpec{NodeName: r.Node, Policy: r.Policy(), Source: r.Source()}
	nm.Status.Phase = r.Phase()
	nm.Status.RequestID = r.requestID.string(r.rare.oddIDs(), oddRequest)
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

// oddIDs returns the ids kept as they are; nil when none is.
func (p *rareParts) oddIDs() *oddIDs {
	if p == nil {
		return nil
	}
	return &p.odd
}

// setIDs keeps the record's ids, compact where they are UUIDs.
func (r *Record) setIDs(uid, requestID, bootLabel string) {
	for slot, pair := range []struct {
		s  string
		to *compactID
	}{{uid, &r.uid}, {requestID, &r.requestID}, {bootLabel, &r.bootLabel}} {
		c, ok := compact(pair.s)
		*pair.to = c
		if !ok {
			if r.rare == nil {
				r.rare = &rareParts{}
			}
			r.rare.odd[slot] = pair.s
		}
	}
}

// Readable says whether the record's body could be decoded; when it could
// not, only its name, UID, resourceVersion and creation time are known.
func (r *Record) Readable() bool { return r.rare == nil || r.rare.unreadable == nil }

// Policy, Source and Phase are the record's, from its kind.
func (r *Record) Policy() string { return r.kindPart(0) }

func (r *Record) Source() v1alpha1.Source { return v1alpha1.Source(r.kindPart(1)) }

func (r *Record) Phase() v1alpha1.Phase { return v1alpha1.Phase(r.kindPart(2)) }

// kindPart is the i-th NUL-terminated part of the record's kind; empty for
// a record that cannot be read, which has none. A part holding a NUL of its
// own (no policy name can; a source or phase the API refused could) would
// read as two: such a record reads as another's kind, never as a panic.
func (r *Record) kindPart(i int) string {
	k := r.kind
	for ; i > 0; i-- {
		_, k, _ = strings.Cut(k, "\x00")
	}
	part, _, _ := strings.Cut(k, "\x00")
	return part
}

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
