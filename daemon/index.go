package daemon

import (
	"slices"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/daemon/journal"
	"github.com/kmaint/kmaint/daemon/sentinel"
)

// journalIndex is what a sync needs from the journal, read once in journal
// order.
type journalIndex struct {
	// first is every request ever journaled, by id, as first journaled: a
	// request belongs to the first boot it was journaled in.
	first map[string]journal.Entry
	// thisBoot are the current boot's requests, in journal order.
	thisBoot []journal.Entry
	// cancels are the current boot's cancellations, by the id of the
	// request they withdraw. Only a cancellation that comes after its
	// request, in the same boot, counts.
	cancels map[string]journal.Entry
	// rebooting is the current boot's first rebooting entry, if any.
	rebooting *journal.Entry
	// applied is the last config requested in an earlier boot, and not
	// withdrawn there, which the reboot ending that boot applied. It is
	// what the journal says; the daemon's state on the Node says it too,
	// and survives a volatile journal.
	applied string
	// sentinelThisBoot are the current boot's sentinel requests, oldest
	// first, each marked when a cancellation withdrew it.
	sentinelThisBoot []sentinel.Request
	// sentinelBefore is the newest sentinel request of an earlier boot.
	sentinelBefore *sentinel.Request
}

// indexJournal reads entries (every boot's, in journal order) for the boot
// bootID.
func indexJournal(entries []journal.Entry, bootID string) journalIndex {
	j := journalIndex{first: map[string]journal.Entry{}, cancels: map[string]journal.Entry{}}
	// Earlier boots' config requests, and which of them were withdrawn
	// without their reboot being asked for in that boot.
	type configRequest struct {
		config              string
		withdrawn, rebooted bool
	}
	var configs []*configRequest
	earlier := map[string]*configRequest{}
	for _, e := range entries {
		switch e.Kind {
		case journal.KindRequest:
			if _, seen := j.first[e.ID]; seen {
				continue
			}
			j.first[e.ID] = e
			if e.Source == v1alpha1.SourceSentinel {
				r := sentinel.Request{ID: e.ID, BootID: e.BootID, Fingerprint: e.Sentinel}
				if e.BootID == bootID {
					j.sentinelThisBoot = append(j.sentinelThisBoot, r)
				} else {
					j.sentinelBefore = &r
				}
			}
			switch {
			case e.BootID == bootID:
				j.thisBoot = append(j.thisBoot, e)
			case e.Config != "":
				c := &configRequest{config: e.Config}
				configs = append(configs, c)
				earlier[e.BootID+"/"+e.ID] = c
			}
		case journal.KindCancel:
			if e.BootID == bootID {
				if r, ok := j.first[e.ID]; ok && r.BootID == bootID {
					if _, seen := j.cancels[e.ID]; !seen {
						j.cancels[e.ID] = e
					}
				}
			} else if c := earlier[e.BootID+"/"+e.ID]; c != nil {
				c.withdrawn = true
			}
		case journal.KindRebooting:
			if e.BootID == bootID {
				if j.rebooting == nil {
					j.rebooting = &e
				}
				continue
			}
			for _, id := range e.Requests {
				if c := earlier[e.BootID+"/"+id]; c != nil {
					c.rebooted = true
				}
			}
		}
	}
	for i, r := range j.sentinelThisBoot {
		_, j.sentinelThisBoot[i].Cancelled = j.cancels[r.ID]
	}
	for _, c := range configs {
		if !c.withdrawn || c.rebooted {
			j.applied = c.config
		}
	}
	return j
}

// rebootingFor reports whether this boot's reboot was asked for the request.
func (j journalIndex) rebootingFor(id string) bool {
	return j.rebooting != nil && slices.Contains(j.rebooting.Requests, id)
}
