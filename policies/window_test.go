package policies

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

func window(schedule string, d time.Duration, tz string) v1alpha1.MaintenanceWindow {
	return v1alpha1.MaintenanceWindow{Schedule: schedule, Duration: metav1.Duration{Duration: d}, TimeZone: tz}
}

func at(t *testing.T, tz, s string) time.Time {
	loc, err := time.LoadLocation(tz)
	if err != nil {
		t.Fatal(err)
	}
	v, err := time.ParseInLocation("2006-01-02 15:04", s, loc)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestWindowState(t *testing.T) {
	cases := map[string]struct {
		window v1alpha1.MaintenanceWindow
		// now is a local time in zone.
		zone, now string
		// wantOpen, and wantUntil (when open) or wantNext (when closed), as
		// local times in zone.
		wantOpen            bool
		wantUntil, wantNext string
	}{
		"inside a daily window": {
			window: window("0 2 * * *", 4*time.Hour, ""), zone: "UTC", now: "2026-06-10 03:00",
			wantOpen: true, wantUntil: "2026-06-10 06:00",
		},
		"at the very start": {
			window: window("0 2 * * *", 4*time.Hour, ""), zone: "UTC", now: "2026-06-10 02:00",
			wantOpen: true, wantUntil: "2026-06-10 06:00",
		},
		"at the very end it is closed": {
			window: window("0 2 * * *", 4*time.Hour, ""), zone: "UTC", now: "2026-06-10 06:00",
			wantNext: "2026-06-11 02:00",
		},
		"weekdays only: Saturday waits for Monday": {
			window: window("0 2 * * 1-5", 4*time.Hour, ""), zone: "UTC", now: "2026-06-13 03:00",
			wantNext: "2026-06-15 02:00",
		},
		"overlapping starts keep it open": {
			window: window("0 1,2 * * *", 90*time.Minute, ""), zone: "UTC", now: "2026-06-10 01:10",
			wantOpen: true, wantUntil: "2026-06-10 03:30",
		},
		"read in its own time zone": {
			window: window("0 2 * * *", 2*time.Hour, "Europe/Berlin"), zone: "Europe/Berlin", now: "2026-01-15 02:30",
			wantOpen: true, wantUntil: "2026-01-15 04:00",
		},
		"same local hour in summer time": {
			window: window("0 2 * * *", 2*time.Hour, "Europe/Berlin"), zone: "Europe/Berlin", now: "2026-07-15 02:30",
			wantOpen: true, wantUntil: "2026-07-15 04:00",
		},
		"spring forward: a 4h window from 01:00 lasts four hours, to 06:00 summer time": {
			window: window("0 1 * * *", 4*time.Hour, "Europe/Berlin"), zone: "Europe/Berlin", now: "2026-03-29 04:00",
			wantOpen: true, wantUntil: "2026-03-29 06:00",
		},
		"fall back: a 4h window from 01:00 lasts four hours, to 04:00 winter time": {
			window: window("0 1 * * *", 4*time.Hour, "Europe/Berlin"), zone: "Europe/Berlin", now: "2026-10-25 03:30",
			wantOpen: true, wantUntil: "2026-10-25 04:00",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			w, err := ParseWindow(tc.window)
			g.Expect(err).NotTo(HaveOccurred())
			s := w.State(at(t, tc.zone, tc.now))
			g.Expect(s.Open).To(Equal(tc.wantOpen))
			if tc.wantOpen {
				g.Expect(s.Until).To(BeTemporally("==", at(t, tc.zone, tc.wantUntil)))
			} else {
				g.Expect(s.Next).To(BeTemporally("==", at(t, tc.zone, tc.wantNext)))
			}
		})
	}
}

func TestParseWindowAcceptsRareDates(t *testing.T) {
	g := NewWithT(t)
	w, err := ParseWindow(window("0 3 29 2 *", time.Hour, ""))
	g.Expect(err).NotTo(HaveOccurred(), "29 February comes every four years")
	g.Expect(w.State(time.Date(2027, 3, 1, 0, 0, 0, 0, time.UTC)).Next).To(Equal(time.Date(2028, 2, 29, 3, 0, 0, 0, time.UTC)))
}

func TestParseWindowRejectsBadInput(t *testing.T) {
	cases := map[string]struct {
		window v1alpha1.MaintenanceWindow
		// wantErr is a substring of the error.
		wantErr string
	}{
		"unknown zone":   {window("0 2 * * *", time.Hour, "Mars/Olympus"), "not a known IANA time zone"},
		"bad cron":       {window("0 25 * * *", time.Hour, ""), "not a five-field cron expression"},
		"six fields":     {window("0 0 2 * * *", time.Hour, ""), "not a five-field cron expression"},
		"empty duration": {window("0 2 * * *", 0, ""), "must be positive"},
		"@every":         {window("@every 1s", time.Hour, ""), "not a five-field cron expression"},
		"@daily":         {window("@daily", time.Hour, ""), "not a five-field cron expression"},
		"CRON_TZ prefix": {window("CRON_TZ=Asia/Tokyo 0 2 * * *", time.Hour, "UTC"), "give it in timeZone"},
		"TZ prefix":      {window("TZ=Asia/Tokyo 0 2 * * *", time.Hour, ""), "give it in timeZone"},
		"zone Local":     {window("0 2 * * *", time.Hour, "Local"), `timeZone "Local"`},
		"30 February":    {window("0 3 30 2 *", time.Hour, ""), "never fires"},
		"31 April":       {window("0 3 31 4 *", time.Hour, "Europe/Berlin"), "never fires"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := ParseWindow(tc.window)
			NewWithT(t).Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
		})
	}
}

func TestAnyOpen(t *testing.T) {
	g := NewWithT(t)
	night, err := ParseWindow(window("0 2 * * *", 2*time.Hour, ""))
	g.Expect(err).NotTo(HaveOccurred())
	noon, err := ParseWindow(window("0 12 * * *", time.Hour, ""))
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(AnyOpen(nil, time.Now()).Open).To(BeTrue(), "no windows: always open")
	s := AnyOpen([]Window{night, noon}, at(t, "UTC", "2026-06-10 12:30"))
	g.Expect(s.Open).To(BeTrue())
	g.Expect(s.Until).To(BeTemporally("==", at(t, "UTC", "2026-06-10 13:00")))
	s = AnyOpen([]Window{night, noon}, at(t, "UTC", "2026-06-10 05:00"))
	g.Expect(s.Open).To(BeFalse())
	g.Expect(s.Next).To(BeTemporally("==", at(t, "UTC", "2026-06-10 12:00")), "the earliest next opening")
}
