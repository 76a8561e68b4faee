package testbed

import (
	"strings"
	"testing"
	"time"
)

// TestCountRequestsCountsEachRequestOnceInItsWindow: a watch logs two
// entries and counts once; requests outside the window and other users'
// stay apart; subresources and paths without a resource are named.
func TestCountRequestsCountsEachRequestOnceInItsWindow(t *testing.T) {
	log := strings.Join([]string{
		`{"auditID":"a","stage":"ResponseComplete","verb":"patch","requestURI":"/api/v1/nodes/n1","user":{"username":"op"},"objectRef":{"resource":"nodes","name":"n1"},"requestReceivedTimestamp":"2026-01-01T00:00:01.000000Z"}`,
		`{"auditID":"b","stage":"ResponseComplete","verb":"patch","requestURI":"/api/v1/nodes/n2/status","user":{"username":"op"},"objectRef":{"resource":"nodes","subresource":"status"},"requestReceivedTimestamp":"2026-01-01T00:00:02.000000Z"}`,
		`{"auditID":"c","stage":"ResponseStarted","verb":"watch","requestURI":"/api/v1/nodes?watch=true","user":{"username":"op"},"objectRef":{"resource":"nodes"},"requestReceivedTimestamp":"2026-01-01T00:00:03.000000Z"}`,
		`{"auditID":"c","stage":"ResponseComplete","verb":"watch","requestURI":"/api/v1/nodes?watch=true","user":{"username":"op"},"objectRef":{"resource":"nodes"},"requestReceivedTimestamp":"2026-01-01T00:00:03.000000Z"}`,
		`{"auditID":"d","stage":"ResponseComplete","verb":"create","requestURI":"/api/v1/namespaces/w/pods/p/eviction","user":{"username":"op"},"objectRef":{"resource":"pods","subresource":"eviction"},"requestReceivedTimestamp":"2026-01-01T00:00:04.000000Z"}`,
		`{"auditID":"e","stage":"ResponseComplete","verb":"get","requestURI":"/readyz?verbose","user":{"username":"daemon"},"requestReceivedTimestamp":"2026-01-01T00:00:05.000000Z"}`,
		`{"auditID":"f","stage":"ResponseComplete","verb":"patch","requestURI":"/api/v1/nodes/n1","user":{"username":"daemon"},"objectRef":{"resource":"nodes"},"requestReceivedTimestamp":"2026-01-01T00:00:05.500000Z"}`,
		`{"auditID":"g","stage":"ResponseComplete","verb":"patch","requestURI":"/api/v1/nodes/n1","user":{"username":"op"},"objectRef":{"resource":"nodes"},"requestReceivedTimestamp":"2026-01-01T00:00:00.500000Z"}`,
		`{"auditID":"h","stage":"ResponseComplete","verb":"patch","requestURI":"/api/v1/nodes/n1","user":{"username":"op"},"objectRef":{"resource":"nodes"},"requestReceivedTimestamp":"2026-01-01T00:00:06.000000Z"}`,
	}, "\n") + "\n"
	from := time.Date(2026, 1, 1, 0, 0, 1, 0, time.UTC)
	to := from.Add(5 * time.Second)
	got, err := countRequests(strings.NewReader(log), from, to)
	if err != nil {
		t.Fatal(err)
	}
	want := RequestCounts{
		"op":     {"patch nodes": 1, "patch nodes/status": 1, "watch nodes": 1, "create pods/eviction": 1},
		"daemon": {"get /readyz": 1, "patch nodes": 1},
	}
	if len(got) != len(want) {
		t.Fatalf("users: got %v, want %v", got, want)
	}
	for user, byWhat := range want {
		if len(got[user]) != len(byWhat) {
			t.Errorf("%s: got %v, want %v", user, got[user], byWhat)
		}
		for what, n := range byWhat {
			if got[user][what] != n {
				t.Errorf("%s %q: got %d, want %d", user, what, got[user][what], n)
			}
		}
	}
	if got.Total("op") != 4 {
		t.Errorf("op's total: got %d, want 4", got.Total("op"))
	}
}
