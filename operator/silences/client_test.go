package silences_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/kmaint/kmaint/operator/silences"
	"github.com/kmaint/kmaint/test/amtest"
)

func nodeSilence(node string, until time.Time) silences.Silence {
	return silences.Silence{Matchers: []silences.Matcher{{Name: "node", Value: node, IsEqual: true}},
		StartsAt: time.Now(), EndsAt: until, CreatedBy: "kmaint", Comment: "kmaint: pool p, node " + node}
}

// A silence made, extended in place (its ID kept), listed by its author
// and expired, against a real Alertmanager, which keeps it over a restart.
func TestASilenceIsMadeExtendedAndExpired(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	am := amtest.Start(t)
	c, err := silences.New(am.URL(), nil)
	g.Expect(err).NotTo(HaveOccurred())

	id, err := c.Create(ctx, nodeSilence("n1", time.Now().Add(10*time.Minute)))
	g.Expect(err).NotTo(HaveOccurred())
	_, err = c.Create(ctx, silences.Silence{Matchers: []silences.Matcher{{Name: "node", Value: "other", IsEqual: true}},
		StartsAt: time.Now(), EndsAt: time.Now().Add(time.Minute), CreatedBy: "a person"})
	g.Expect(err).NotTo(HaveOccurred())

	later := time.Now().Add(30 * time.Minute).Truncate(time.Millisecond)
	extended, err := c.Extend(ctx, id, later)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(extended).To(Equal(id), "an extension keeps the silence's ID")
	s, err := c.Get(ctx, id)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.EndsAt.Equal(later)).To(BeTrue(), "ends at %s, want %s", s.EndsAt, later)
	g.Expect(s.Expired()).To(BeFalse())

	mine, err := c.List(ctx, "kmaint")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(mine).To(HaveLen(1))
	g.Expect(mine[0].ID).To(Equal(id))

	am.Restart(t)
	c, err = silences.New(am.URL(), nil)
	g.Expect(err).NotTo(HaveOccurred())
	mine, err = c.List(ctx, "kmaint")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(mine).To(HaveLen(1), "a restarted Alertmanager keeps its silences")

	g.Expect(c.Expire(ctx, id)).To(Succeed())
	s, err = c.Get(ctx, id)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.Expired()).To(BeTrue())
	_, err = c.Extend(ctx, id, later)
	g.Expect(errors.Is(err, silences.ErrExpired)).To(BeTrue(), "an expired silence is not extended: %v", err)

	g.Expect(c.Expire(ctx, "00000000-0000-0000-0000-000000000000")).To(Succeed(), "a silence already gone is expired")
	_, err = c.Get(ctx, "00000000-0000-0000-0000-000000000000")
	g.Expect(errors.Is(err, silences.ErrNotFound)).To(BeTrue(), "%v", err)
}

// An Alertmanager that is down, refuses the credentials or fails is an
// error that says so, never a silence.
func TestAnAlertmanagerThatFailsIsAnError(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	for name, code := range map[string]int{"refused": http.StatusUnauthorized, "failing": http.StatusInternalServerError} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, name, code)
		}))
		c, err := silences.New(srv.URL, nil)
		g.Expect(err).NotTo(HaveOccurred())
		_, err = c.Create(ctx, nodeSilence("n1", time.Now().Add(time.Minute)))
		var status *silences.StatusError
		g.Expect(errors.As(err, &status)).To(BeTrue(), "%s: %v", name, err)
		g.Expect(status.Code).To(Equal(code))
		srv.Close()
		_, err = c.List(ctx, "kmaint")
		g.Expect(err).To(MatchError(ContainSubstring("alertmanager GET /api/v2/silences")), "down")
	}
	long := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, strings.Repeat("x", 1<<20), http.StatusBadGateway)
	}))
	defer long.Close()
	c, err := silences.New(long.URL, nil)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = c.Get(ctx, "id")
	g.Expect(len(err.Error())).To(BeNumerically("<", 400), "a long answer is cut short in the error")
	for _, bad := range []string{"", "alertmanager:9093", "ftp://am", "http://"} {
		_, err := silences.New(bad, nil)
		g.Expect(err).To(HaveOccurred(), "%q", bad)
	}
}
