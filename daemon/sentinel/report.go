package sentinel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// A sentinel file lives in the host's /run, beside the sockets of the
// container runtime, systemd and others. Mounted into the daemon, which
// runs as root, those sockets would be reachable (a read-only mount does
// not stop connect()). So in the DaemonSet another container, running as
// nobody with no capabilities, looks at the file (Watch) and writes each
// Observation to a report file in a volume the two share; the daemon reads
// the report (Reported), and never sees the host's /run.

// fingerprintPattern is a fingerprint as Checkers write it.
var fingerprintPattern = regexp.MustCompile(`^[0-9a-f]{64}$`)

// maxReportSize bounds the report the daemon reads: an observation is a few
// hundred bytes.
const maxReportSize = 16 << 10

// report is the report file's content.
type report struct {
	Observation
	// Time is when the observation was made.
	Time time.Time `json:"time"`
}

// WriteReport writes o, observed at now, to path, whole or not at all.
func WriteReport(path string, o Observation, now time.Time) error {
	b, err := json.Marshal(report{Observation: o, Time: now.UTC()})
	if err != nil {
		return fmt.Errorf("encode sentinel report: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".report-*")
	if err != nil {
		return fmt.Errorf("write sentinel report: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("write sentinel report: %w", err)
	}
	// Readable by the daemon, which runs as root without the capability
	// to read others' private files.
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("write sentinel report: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write sentinel report: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write sentinel report: %w", err)
	}
	return nil
}

// Watch looks with c every interval and writes each observation to the
// report at path, until ctx is done. A report that cannot be written is
// returned: the container then exits and is restarted, and meanwhile the
// daemon finds the report stale.
func Watch(ctx context.Context, c Checker, path string, interval time.Duration, now func() time.Time) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := WriteReport(path, c.Check(ctx), now()); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Reported reads the report another container writes (see Watch). A report
// that is missing, unreadable, malformed or older than MaxAge is a Problem:
// what the host's sentinel says is then unknown, and nothing is asked for.
type Reported struct {
	// Path is the report file.
	Path string
	// MaxAge is how old a report may be.
	MaxAge time.Duration
	// Now is the clock.
	Now func() time.Time
	// Started is when the daemon began to read reports: until MaxAge after
	// it, a report that is not there yet is Pending (the sentinel
	// container of a new boot has not looked yet), not a Problem.
	Started time.Time
}

var _ Checker = Reported{}

// Check reads the report.
func (r Reported) Check(context.Context) Observation {
	b, present, err := readBounded(r.Path)
	switch {
	case err != nil:
		return Observation{Problem: fmt.Sprintf("sentinel report %s: %v", r.Path, err)}
	case !present && r.Now().Sub(r.Started) < r.MaxAge:
		return Observation{Pending: true}
	case !present:
		return Observation{Problem: fmt.Sprintf("no sentinel report at %s yet: the sentinel container has not looked at the host's sentinel (see its log)", r.Path)}
	case len(b) > maxReportSize:
		return Observation{Problem: fmt.Sprintf("sentinel report %s is %d bytes, more than the %d a report takes", r.Path, len(b), maxReportSize)}
	}
	var rep report
	if err := json.Unmarshal(b, &rep); err != nil {
		return Observation{Problem: fmt.Sprintf("sentinel report %s is malformed: %v", r.Path, err)}
	}
	if age := r.Now().Sub(rep.Time); age > r.MaxAge || age < -r.MaxAge {
		return Observation{Problem: fmt.Sprintf("sentinel report %s is from %s, %s ago: the sentinel container has stopped looking (see its log)",
			r.Path, rep.Time.Format(time.RFC3339), age.Round(time.Second))}
	}
	o := rep.Observation
	if err := checkObservation(o); err != nil {
		return Observation{Problem: fmt.Sprintf("sentinel report %s: %v", r.Path, err)}
	}
	return o
}

// checkObservation refuses an observation no Checker makes.
func checkObservation(o Observation) error {
	switch {
	case o.Needed && o.Problem != "":
		return errors.New("needed and a problem at once")
	case o.Pending:
		return errors.New("pending: only the daemon says a report has not come yet")
	case o.Needed && !fingerprintPattern.MatchString(o.Fingerprint):
		return fmt.Errorf("fingerprint %q is not 64 hex digits", truncate(o.Fingerprint, 80))
	case o.Needed && v1alpha1.CheckReason(o.Reason) != nil:
		return fmt.Errorf("reason: %w", v1alpha1.CheckReason(o.Reason))
	case len(o.Problem) > 2*v1alpha1.MaxReasonLength:
		return errors.New("problem too long")
	}
	return nil
}
