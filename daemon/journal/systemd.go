package journal

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/coreos/go-systemd/v22/journal"
	"github.com/coreos/go-systemd/v22/sdjournal"
)

// Systemd is the node's systemd journal: entries go to journald's socket and
// come back from the journal files of the local machine.
type Systemd struct {
	// Dir, when set, reads journal files from this directory instead of the
	// system's journal locations.
	Dir string
	// OnInvalid is told about entries carrying kmaint's MESSAGE_ID that are
	// ignored: written by a user other than root, or malformed.
	OnInvalid func(fields map[string]string, err error)
}

var _ Journal = (*Systemd)(nil)

// Append writes the entry through journald's native socket.
func (s *Systemd) Append(e Entry) error {
	if !journal.Enabled() {
		return errors.New("the systemd journal is not reachable: no socket at /run/systemd/journal/socket")
	}
	msg, vars := e.fields()
	if err := journal.Send(msg, journal.PriNotice, vars); err != nil {
		return fmt.Errorf("write to the journal: %w", err)
	}
	return nil
}

// Follow reads kmaint's entries from the start of the journal, then waits on
// the journal for new ones; it never re-reads what it has seen.
func (s *Systemd) Follow(ctx context.Context, fn func(Entry), caughtUp func()) error {
	j, err := s.open()
	if err != nil {
		return err
	}
	defer j.Close()
	// Match any of kmaint's MESSAGE_IDs. The root check is done on the
	// trusted _UID field below, not in the match, so entries from other
	// users can be reported rather than silently dropped.
	for i, id := range MessageIDs() {
		if i > 0 {
			if err := j.AddDisjunction(); err != nil {
				return fmt.Errorf("journal match: %w", err)
			}
		}
		if err := j.AddMatch("MESSAGE_ID=" + id); err != nil {
			return fmt.Errorf("journal match: %w", err)
		}
	}
	if err := j.SeekHead(); err != nil {
		return fmt.Errorf("seek journal head: %w", err)
	}
	replaying := true
	for {
		n, err := j.Next()
		if err != nil {
			return fmt.Errorf("read journal: %w", err)
		}
		if n > 0 {
			s.deliver(j, fn)
			continue
		}
		if replaying {
			replaying = false
			caughtUp()
		}
		if ctx.Err() != nil {
			return nil
		}
		// Wait returns as soon as journald appends; the timeout only bounds
		// how long a cancelled ctx goes unnoticed.
		if r := j.Wait(500 * time.Millisecond); r < 0 {
			return fmt.Errorf("wait on the journal: error %d", r)
		}
	}
}

// Boots lists the boots the journal files hold entries of, from journald's
// index of the _BOOT_ID field.
func (s *Systemd) Boots() ([]string, error) {
	j, err := s.open()
	if err != nil {
		return nil, err
	}
	defer j.Close()
	ids, err := j.GetUniqueValues("_BOOT_ID")
	if err != nil {
		return nil, fmt.Errorf("list the journal's boots: %w", err)
	}
	for i := range ids {
		ids[i] = FormatBootID(ids[i])
	}
	return ids, nil
}

func (s *Systemd) open() (*sdjournal.Journal, error) {
	var j *sdjournal.Journal
	var err error
	if s.Dir != "" {
		j, err = sdjournal.NewJournalFromDir(s.Dir)
	} else {
		j, err = sdjournal.NewJournal()
	}
	if err != nil {
		return nil, fmt.Errorf("open the journal: %w", err)
	}
	return j, nil
}

func (s *Systemd) deliver(j *sdjournal.Journal, fn func(Entry)) {
	raw, err := j.GetEntry()
	if err != nil {
		s.invalid(nil, fmt.Errorf("read journal entry: %w", err))
		return
	}
	// sd-journal hands the receive time apart from the fields.
	raw.Fields["__REALTIME_TIMESTAMP"] = strconv.FormatUint(raw.RealtimeTimestamp, 10)
	e, err := parse(raw.Fields)
	switch {
	case err != nil:
		s.invalid(raw.Fields, err)
	case e.UID != 0:
		s.invalid(raw.Fields, fmt.Errorf("entry written by uid %d, not root: ignored", e.UID))
	default:
		fn(e)
	}
}

func (s *Systemd) invalid(fields map[string]string, err error) {
	if s.OnInvalid != nil {
		s.OnInvalid(fields, err)
	}
}
