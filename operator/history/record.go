package history

import (
	"math"
	"time"

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
	UID             types.UID
	ResourceVersion string
	Node            string
	Policy          string
	Source          v1alpha1.Source
	Phase           v1alpha1.Phase
	RequestID       string
	BootLabel       string
	Value           string
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
		UID:             nm.UID,
		ResourceVersion: nm.ResourceVersion,
		Created:         unixOf(&nm.CreationTimestamp),
		Succeeded:       noTime,
		Failed:          noTime,
	}
	if nm.Unreadable() != nil {
		r.unreadable = nm
		return r
	}
	r.Node = intern(nm.Spec.NodeName)
	r.Policy = intern(nm.Spec.Policy)
	r.Source = v1alpha1.Source(intern(string(nm.Spec.Source)))
	r.Phase = v1alpha1.Phase(intern(string(nm.Status.Phase)))
	r.RequestID = nm.RequestID()
	r.BootLabel = nm.Labels[v1alpha1.BootIDLabel]
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
			UID:               r.UID,
			ResourceVersion:   r.ResourceVersion,
			CreationTimestamp: *timeOf(r.Created),
		},
	}
	if r.BootLabel != "" {
		nm.Labels = map[string]string{v1alpha1.BootIDLabel: r.BootLabel}
	}
	if r.Value != "" {
		nm.Annotations = map[string]string{v1alpha1.ValueAnnotation: r.Value}
	}
	nm.Spec = v1alpha1.NodeMaintenanceSpec{NodeName: r.Node, Policy: r.Policy, Source: r.Source}
	nm.Status.Phase = r.Phase
	nm.Status.RequestID = r.RequestID
	if r.Succeeded != noTime {
		nm.Status.PhaseTimes.Succeeded = timeOf(r.Succeeded)
	}
	if r.Failed != noTime {
		nm.Status.PhaseTimes.Failed = timeOf(r.Failed)
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
