package policies

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

func TestScheduleDue(t *testing.T) {
	g := NewWithT(t)
	monthly, err := ParseSchedule(&v1alpha1.ScheduleTrigger{Cron: "0 3 1 * *", TimeZone: "Europe/Berlin"})
	g.Expect(err).NotTo(HaveOccurred())
	berlin := func(s string) time.Time { return at(t, "Europe/Berlin", s) }

	fire, next := monthly.Due(berlin("2026-02-15 00:00"), berlin("2026-02-28 23:00"))
	g.Expect(fire.IsZero()).To(BeTrue(), "nothing between the last fire and now")
	g.Expect(next).To(BeTemporally("==", berlin("2026-03-01 03:00")))

	fire, next = monthly.Due(berlin("2026-03-01 03:00"), berlin("2026-04-01 03:00"))
	g.Expect(fire).To(BeTemporally("==", berlin("2026-04-01 03:00")), "fires at its time exactly, the first of April being in summer time")
	g.Expect(fire.UTC().Hour()).To(Equal(1), "03:00 CEST is 01:00 UTC")
	g.Expect(next).To(BeTemporally("==", berlin("2026-05-01 03:00")))

	fire, _ = monthly.Due(berlin("2026-01-01 03:00"), berlin("2026-06-10 12:00"))
	g.Expect(fire).To(BeTemporally("==", berlin("2026-06-01 03:00")), "five missed fires collapse into the latest")

	// A daily 02:30 in Berlin does not exist on the spring-forward day:
	// cron skips it, and the next fire is the day after.
	daily, err := ParseSchedule(&v1alpha1.ScheduleTrigger{Cron: "30 2 * * *", TimeZone: "Europe/Berlin"})
	g.Expect(err).NotTo(HaveOccurred())
	fire, next = daily.Due(berlin("2026-03-28 02:30"), berlin("2026-03-29 12:00"))
	g.Expect(fire.IsZero()).To(BeTrue(), "02:30 does not exist on 29 March 2026 in Berlin")
	g.Expect(next).To(BeTemporally("==", berlin("2026-03-30 02:30")))
	// On the fall-back day 02:30 happens twice; it fires once.
	fire, next = daily.Due(berlin("2026-10-24 02:30"), berlin("2026-10-25 04:00"))
	g.Expect(fire.IsZero()).To(BeFalse())
	g.Expect(next).To(BeTemporally("==", berlin("2026-10-26 02:30")))

	minutely, err := ParseSchedule(&v1alpha1.ScheduleTrigger{Cron: "* * * * *"})
	g.Expect(err).NotTo(HaveOccurred())
	now := time.Date(2026, 6, 1, 12, 0, 30, 0, time.UTC)
	fire, _ = minutely.Due(now.AddDate(-1, 0, 0), now)
	g.Expect(fire).To(Equal(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)), "a year of missed minutes is walked quickly and collapses into one")

	_, err = ParseSchedule(&v1alpha1.ScheduleTrigger{Cron: "0 3 * *"})
	g.Expect(err).To(MatchError(ContainSubstring(`"0 3 * *" is not a five-field cron expression`)))
	_, err = ParseSchedule(&v1alpha1.ScheduleTrigger{Cron: "0 3 * * *", TimeZone: "Mars/Olympus"})
	g.Expect(err).To(MatchError(ContainSubstring(`timeZone "Mars/Olympus"`)))
}

func TestResolveCap(t *testing.T) {
	g := NewWithT(t)
	c := func(v intstr.IntOrString, n int) int {
		got, err := ResolveCap(&v, n)
		g.Expect(err).NotTo(HaveOccurred())
		return got
	}
	g.Expect(ResolveCap(nil, 100)).To(Equal(1))
	g.Expect(c(intstr.FromInt32(3), 100)).To(Equal(3))
	g.Expect(c(intstr.FromString("10%"), 100)).To(Equal(10))
	g.Expect(c(intstr.FromString("10%"), 5)).To(Equal(1), "rounds down, but never to 0")
	g.Expect(c(intstr.FromString("100%"), 7)).To(Equal(7))
	_, err := ResolveCap(&intstr.IntOrString{Type: intstr.String, StrVal: "lots"}, 10)
	g.Expect(err).To(MatchError(ContainSubstring(`maxConcurrentRequests "lots"`)))
}
