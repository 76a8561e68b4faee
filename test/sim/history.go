package sim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/retention"
	"github.com/kmaint/kmaint/test/shape"
)

// HistoryPolicy is the RebootPolicy the seeded history says raised it: a
// monthly schedule, the way a cluster reboots every node once a month for
// its kernel updates.
const HistoryPolicy = "monthly-reboot"

// month is a twelfth of a year, so that twelve of them back from any day
// stay within a year of it.
const month = 8766 * time.Hour / 12

// HistoryRetention is the operator's retention (--history-per-node,
// --history-max-age) that keeps months of seeded history whole: one record
// per node and month, none older than 366 days (8784h; the oldest seeded
// record is at most 365.25 days old). A cluster that keeps a year of a
// monthly schedule's history runs with it; each new reboot then pushes the
// node's oldest record out, as in such a cluster's steady state.
func HistoryRetention(months int) retention.Retention {
	return retention.Retention{PerNode: months, MaxAge: 8784 * time.Hour}
}

// HistorySchedule is HistoryPolicy's cron expression: monthly, on the day
// of the month two weeks from now (the 1st instead of a day some months
// lack), so that a bench or test that seeds history never sees it fire.
func HistorySchedule(now time.Time) string {
	day := now.UTC().AddDate(0, 0, 14).Day()
	if day > 28 {
		day = 1
	}
	return fmt.Sprintf("0 0 %d * *", day)
}

// SeedHistory gives every node of the cluster the finished reboots a
// monthly schedule would have left over the past months, and the
// RebootPolicy that raised them (HistoryPolicy, over every node, as the
// operator of such a cluster carries it): one Succeeded
// NodeMaintenance per node and month, the latest ending in the node's
// current boot, shaped as the operator writes them (the policy
// controller's name, labels and spec, then the maintenance controller's
// status with its phase times, boot IDs, message and Succeeded condition).
// The API server stamps creation times; the phase times carry the past.
// Nodes are seeded by a few workers at once, each node's records oldest
// first, so that creation order agrees with age. It returns how many it
// created.
func (c *Cluster) SeedHistory(ctx context.Context, months int, now time.Time) (int, error) {
	policy := &v1alpha1.RebootPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: HistoryPolicy},
		Spec: v1alpha1.RebootPolicySpec{
			Schedule: &v1alpha1.ScheduleTrigger{Cron: HistorySchedule(now)},
		},
	}
	if err := c.Bed.Client.Create(ctx, policy); err != nil {
		return 0, fmt.Errorf("seed history: policy %s: %w", HistoryPolicy, err)
	}
	next := make(chan Node)
	var created sync.Map
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for range startWorkers {
		wg.Go(func() {
			for n := range next {
				count, err := c.seedNode(ctx, n, months, now)
				created.Store(n.Name(), count)
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	for _, n := range c.nodes {
		next <- n
	}
	close(next)
	wg.Wait()
	total := 0
	created.Range(func(_, v any) bool { total += v.(int); return true })
	return total, errors.Join(errs...)
}

// seedNode creates one node's history, oldest first.
func (c *Cluster) seedNode(ctx context.Context, n Node, months int, now time.Time) (int, error) {
	r := shape.NodeRand("history/" + n.Name())
	// The boots the node went through: boots[k] is the one it had k
	// months ago, boots[0] the current.
	boots := []string{n.BootID()}
	for range months {
		boots = append(boots, uuid.NewString())
	}
	for k := months; k >= 1; k-- {
		fired := now.Add(-time.Duration(k) * month).Truncate(time.Hour)
		// Nodes wait their turn in the pool's budget: hours, not seconds.
		start := fired.Add(time.Duration(r.Int64N(int64(4 * time.Hour)))).Truncate(time.Second)
		nm := seededMaintenance(n.Name(), fired, start, boots[k], boots[k-1], r.Int64N)
		status := nm.Status
		if err := c.Bed.Client.Create(ctx, nm); err != nil {
			return months - k, fmt.Errorf("seed history of node %s: %w", n.Name(), err)
		}
		nm.Status = status
		nm.Status.RequestID = string(nm.UID)
		if err := c.Bed.Client.Status().Update(ctx, nm); err != nil {
			return months - k, fmt.Errorf("seed history of node %s: status of %s: %w", n.Name(), nm.Name, err)
		}
	}
	return months, nil
}

// seededMaintenance is a finished monthly reboot of node, raised when the
// schedule fired, started at start, from boot before to boot after. jitter
// draws the length of each step.
func seededMaintenance(node string, fired, start time.Time, before, after string, jitter func(int64) int64) *v1alpha1.NodeMaintenance {
	boot := sha256.Sum256([]byte(before))
	at := func(t time.Time) *metav1.Time { mt := metav1.NewTime(t); return &mt }
	secs := func(lo, hi int64) time.Duration { return time.Duration(lo+jitter(hi-lo+1)) * time.Second }
	requested := start.Add(secs(1, 4))
	draining := requested.Add(secs(0, 3600))
	approved := draining.Add(secs(20, 240))
	rebooting := approved.Add(secs(1, 3))
	succeeded := rebooting.Add(secs(60, 180))
	message := fmt.Sprintf("node %s rebooted: boot %s, then %s", node, before, after)
	return &v1alpha1.NodeMaintenance{
		ObjectMeta: metav1.ObjectMeta{
			Name:   v1alpha1.ObjectName(HistoryPolicy, node, strconv.FormatInt(fired.Unix(), 36), hex.EncodeToString(boot[:3])),
			Labels: map[string]string{v1alpha1.PolicyLabel: HistoryPolicy},
		},
		Spec: v1alpha1.NodeMaintenanceSpec{
			NodeName: node,
			Type:     v1alpha1.RebootMaintenance,
			Source:   v1alpha1.SourceSchedule,
			Policy:   HistoryPolicy,
			Reason:   fmt.Sprintf("policy %s: schedule %q (UTC) fired at %s", HistoryPolicy, "@monthly", fired.UTC().Format(time.RFC3339)),
		},
		Status: v1alpha1.NodeMaintenanceStatus{
			Phase:           v1alpha1.PhaseSucceeded,
			BootIDBefore:    before,
			JournaledBootID: before,
			JournaledTime:   at(start.Add(time.Second)),
			BootIDAfter:     after,
			PhaseTimes: v1alpha1.PhaseTimes{
				Pending: at(start), Requested: at(requested), Draining: at(draining),
				Approved: at(approved), Rebooting: at(rebooting), Succeeded: at(succeeded),
			},
			Message: message,
			Conditions: []metav1.Condition{{
				Type: v1alpha1.SucceededCondition, Status: metav1.ConditionTrue, Reason: v1alpha1.RebootedReason,
				Message: message, LastTransitionTime: *at(succeeded),
			}},
		},
	}
}
