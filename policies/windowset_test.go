package policies

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

func TestAllOpen(t *testing.T) {
	win := func(schedule string, d time.Duration) v1alpha1.MaintenanceWindow {
		return v1alpha1.MaintenanceWindow{Schedule: schedule, Duration: metav1.Duration{Duration: d}}
	}
	// Saturday 1 March 2025, 03:00 UTC.
	now := time.Date(2025, 3, 1, 3, 0, 0, 0, time.UTC)
	cases := map[string]struct {
		sets [][]v1alpha1.MaintenanceWindow
		// want is the combined state at now.
		want WindowState
	}{
		"no sets is open for ever": {want: WindowState{Open: true}},
		"empty sets are open for ever": {
			sets: [][]v1alpha1.MaintenanceWindow{nil, nil},
			want: WindowState{Open: true},
		},
		"both open: until the first closes": {
			sets: [][]v1alpha1.MaintenanceWindow{{win("0 2 * * *", 4*time.Hour)}, {win("30 2 * * *", time.Hour)}},
			want: WindowState{Open: true, Until: time.Date(2025, 3, 1, 3, 30, 0, 0, time.UTC)},
		},
		"one set open, the other without windows": {
			sets: [][]v1alpha1.MaintenanceWindow{{win("0 2 * * *", 4*time.Hour)}, nil},
			want: WindowState{Open: true, Until: time.Date(2025, 3, 1, 6, 0, 0, 0, time.UTC)},
		},
		"pool open, policy closed: the policy's opening": {
			sets: [][]v1alpha1.MaintenanceWindow{{win("0 * * * *", 2*time.Hour)}, {win("0 5 * * *", time.Hour)}},
			want: WindowState{Next: time.Date(2025, 3, 1, 5, 0, 0, 0, time.UTC)},
		},
		"openings that do not overlap at first: the first moment both are open": {
			// Pool: 22:00-02:00 daily. Policy: Sundays from 00:00 for 3h.
			sets: [][]v1alpha1.MaintenanceWindow{{win("0 22 * * *", 4*time.Hour)}, {win("0 0 * * 0", 3*time.Hour)}},
			want: WindowState{Next: time.Date(2025, 3, 2, 0, 0, 0, 0, time.UTC)},
		},
		"policy opens inside a later pool window": {
			// Pool: 04:00-08:00 daily. Policy: 07:00 daily for 2h.
			sets: [][]v1alpha1.MaintenanceWindow{{win("0 4 * * *", 4*time.Hour)}, {win("0 7 * * *", 2*time.Hour)}},
			want: WindowState{Next: time.Date(2025, 3, 1, 7, 0, 0, 0, time.UTC)},
		},
		"windows that never meet have no next opening": {
			// Weekdays only against Sundays only.
			sets: [][]v1alpha1.MaintenanceWindow{{win("0 1 * * 1-5", time.Hour)}, {win("0 1 * * 0", time.Hour)}},
			want: WindowState{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var sets [][]Window
			for _, set := range tc.sets {
				parsed, err := ParseWindows(set)
				if err != nil {
					t.Fatal(err)
				}
				sets = append(sets, parsed)
			}
			got := AllOpen(now, sets...)
			if got != tc.want {
				t.Errorf("AllOpen = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestParseWindowsNamesTheBadOne(t *testing.T) {
	_, err := ParseWindows([]v1alpha1.MaintenanceWindow{
		{Schedule: "0 2 * * *", Duration: metav1.Duration{Duration: time.Hour}},
		{Schedule: "0 2 * *", Duration: metav1.Duration{Duration: time.Hour}},
	})
	if err == nil || err.Error()[:11] != "windows[1]:" {
		t.Fatalf("err = %v, want one naming windows[1]", err)
	}
}
