package recent

import (
	"testing"
	"time"
)

type made time.Time

func (m made) MadeAt() time.Time { return time.Time(m) }

// TestPutForgetsWhatIsStale keeps the values made within the bound of the
// newest, and forgets older ones: keys never asked for again do not pile up.
func TestPutForgetsWhatIsStale(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := New[string, made]()
	c.Put("old", made(t0), time.Minute)
	c.Put("recent", made(t0.Add(50*time.Second)), time.Minute)
	if _, ok := c.Get("old"); !ok {
		t.Fatal("a value within the bound of the newest was forgotten")
	}
	c.Put("new", made(t0.Add(90*time.Second)), time.Minute)
	if _, ok := c.Get("old"); ok {
		t.Error("a value made more than the bound before the newest is kept")
	}
	if v, ok := c.Get("recent"); !ok || !v.MadeAt().Equal(t0.Add(50*time.Second)) {
		t.Errorf("Get(recent) = %v, %t; want the value put", v.MadeAt(), ok)
	}
}
