package v1alpha1_test

import (
	"fmt"
	"strings"
	"testing"
)

// Freeze periods on pools and policies: the API server accepts an absolute
// and a recurring freeze, the biggest values the API allows among them, and
// refuses what is neither or both, an end not after its start, a time zone
// on an absolute freeze, a duration of 0 or over 366 days, a 33rd freeze,
// and names that could not be told apart in conditions and events.
func TestFreezeAdmission(t *testing.T) {
	const kindMsg = "a freeze is either absolute (start and end) or recurring (schedule and duration), not both"
	absolute := func(start, end string) map[string]any {
		return map[string]any{"name": "season", "reason": "shopping season", "start": start, "end": end}
	}
	recurring := func(duration string) map[string]any {
		return map[string]any{"name": "fridays", "schedule": "0 0 * * 5", "duration": duration, "timeZone": "Europe/Berlin"}
	}
	with := func(f map[string]any, kv ...any) map[string]any {
		out := map[string]any{}
		for k, v := range f {
			out[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] == nil {
				delete(out, kv[i].(string))
				continue
			}
			out[kv[i].(string)] = kv[i+1]
		}
		return out
	}
	many := func(n int) []any {
		var out []any
		for i := range n {
			// The biggest values the API allows: a 63-character name, a
			// 512-character reason, 366 days every minute.
			name := fmt.Sprintf("f%02d-%s", i, strings.Repeat("x", 59))
			out = append(out, map[string]any{"name": name, "reason": strings.Repeat("r", 512), "schedule": "* * * * *", "duration": "8784h", "timeZone": "America/Argentina/ComodRivadavia"})
		}
		return out
	}
	season := absolute("2026-11-20T00:00:00Z", "2026-12-27T00:00:00Z")
	cases := map[string]struct {
		freezes   []any
		wantErr   string
		wantField string
	}{
		"absolute":                     {freezes: []any{season}},
		"absolute with offsets":        {freezes: []any{absolute("2026-11-20T00:00:00+09:00", "2026-11-20T00:00:01+09:00")}},
		"recurring":                    {freezes: []any{recurring("72h")}},
		"recurring without a zone":     {freezes: []any{with(recurring("72h"), "timeZone", nil)}},
		"one of each":                  {freezes: []any{season, recurring("72h")}},
		"32 freezes of the biggest":    {freezes: many(32)},
		"duration of 366 days":         {freezes: []any{recurring("8784h")}},
		"both kinds":                   {freezes: []any{with(season, "schedule", "0 0 * * 5", "duration", "1h")}, wantErr: kindMsg},
		"neither kind":                 {freezes: []any{map[string]any{"name": "nothing"}}, wantErr: kindMsg},
		"start without end":            {freezes: []any{with(season, "end", nil)}, wantErr: kindMsg},
		"schedule without duration":    {freezes: []any{with(recurring("1h"), "duration", nil)}, wantErr: kindMsg},
		"end before start":             {freezes: []any{absolute("2026-12-27T00:00:00Z", "2026-11-20T00:00:00Z")}, wantErr: "end must be after start"},
		"end at start":                 {freezes: []any{absolute("2026-12-27T00:00:00Z", "2026-12-27T01:00:00+01:00")}, wantErr: "end must be after start"},
		"timeZone on an absolute one":  {freezes: []any{with(season, "timeZone", "Europe/Berlin")}, wantErr: "timeZone applies to a recurring freeze"},
		"start not a time":             {freezes: []any{absolute("next friday", "2026-12-27T00:00:00Z")}, wantErr: "date-time"},
		"end without an offset":        {freezes: []any{absolute("2026-11-20T00:00:00Z", "2026-12-27 00:00")}, wantErr: "date-time"},
		"duration 0":                   {freezes: []any{recurring("0s")}, wantErr: "duration must be a positive Go duration of at most 8784h"},
		"duration past 366 days":       {freezes: []any{recurring("8785h")}, wantErr: "duration must be a positive Go duration of at most 8784h"},
		"duration negative":            {freezes: []any{recurring("-1h")}, wantErr: "duration must be a positive Go duration of at most 8784h"},
		"duration not a duration":      {freezes: []any{recurring("3 days")}, wantErr: "duration"},
		"33 freezes":                   {freezes: many(33), wantErr: "must have at most 32 items"},
		"a name with a space":          {freezes: []any{with(season, "name", "black friday")}, wantErr: "name in body should match"},
		"a name starting with a dash":  {freezes: []any{with(season, "name", "-x")}, wantErr: "name in body should match"},
		"an empty name":                {freezes: []any{with(season, "name", "")}, wantErr: "name in body should be at least 1 chars long"},
		"a name of 64 characters":      {freezes: []any{with(season, "name", strings.Repeat("n", 64))}, wantErr: "Too long"},
		"two freezes of the same name": {freezes: []any{season, with(recurring("1h"), "name", "season")}, wantErr: "Duplicate value"},
		"a reason past 512 characters": {freezes: []any{with(season, "reason", strings.Repeat("r", 513))}, wantErr: "Too long"},
	}
	pools := map[string]admissionCase{}
	policies := map[string]admissionCase{}
	for name, tc := range cases {
		pools[name] = admissionCase{spec: map[string]any{"nodeSelector": selector(), "freezes": tc.freezes}, wantErr: tc.wantErr}
		policies[name] = admissionCase{spec: map[string]any{"schedule": map[string]any{"cron": "0 3 1 * *"}, "freezes": tc.freezes}, wantErr: tc.wantErr}
	}
	t.Run("MaintenancePool", func(t *testing.T) { runAdmissionCases(t, "MaintenancePool", pools) })
	t.Run("RebootPolicy", func(t *testing.T) { runAdmissionCases(t, "RebootPolicy", policies) })
	t.Run("NodeMaintenance", func(t *testing.T) {
		runAdmissionCases(t, "NodeMaintenance", map[string]admissionCase{
			"ignoreFreezes": {spec: map[string]any{"nodeName": "n1", "reason": "CVE", "ignoreFreezes": true}},
		})
	})
}
