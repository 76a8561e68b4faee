package silences

import (
	"context"
	"testing"
	"time"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/test/amtest"
)

// The record's key is readable by anyone who may read Nodes: a silence
// someone made under it, muting something else, is not adopted (and then
// extended) as the node's; it is still expired with the maintenance.
func TestASilenceUnderTheKeyIsAdoptedOnlyIfItMutesWhatKmaintWould(t *testing.T) {
	ctx := context.Background()
	am := amtest.Start(t)
	api, err := New(am.URL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := &protocol.SilenceRecord{Key: "k1", Pool: "p"}
	mark := " (" + keyMark("k1", "node") + ")"
	decoy := Silence{Matchers: []Matcher{{Name: "alertname", Value: ".+", IsRegex: true, IsEqual: true}},
		StartsAt: time.Now(), EndsAt: time.Now().Add(time.Hour), CreatedBy: CreatedBy, Comment: "not kmaint's" + mark}
	decoyID, err := api.Create(ctx, decoy)
	if err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{Alertmanagers: []Alertmanager{{Name: api.Name(), API: api}}}
	c := &pass{r: r, p: Plan{Record: rec}, listed: map[string][]Silence{}}
	want := []Matcher{{Name: "node", Value: "n1", IsEqual: true}}
	if found, err := c.find(ctx, &r.Alertmanagers[0], "node", want); err != nil || found != nil {
		t.Fatalf("a silence under the key muting everything was adopted: %+v, %v", found, err)
	}
	if found, err := c.find(ctx, &r.Alertmanagers[0], "node", nil); err != nil || found == nil || found.ID != decoyID {
		t.Fatalf("at the end, what claims the key is found to be expired: %+v, %v", found, err)
	}

	mineID, err := api.Create(ctx, Silence{Matchers: want, StartsAt: time.Now(), EndsAt: time.Now().Add(time.Hour), CreatedBy: CreatedBy, Comment: "kmaint" + mark})
	if err != nil {
		t.Fatal(err)
	}
	c.listed = map[string][]Silence{}
	if found, err := c.find(ctx, &r.Alertmanagers[0], "node", want); err != nil || found == nil || found.ID != mineID {
		t.Fatalf("kmaint's own silence, as Alertmanager answers it, is found: %+v, %v", found, err)
	}
}
