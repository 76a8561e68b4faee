package testbed

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Option changes how Start runs the API server.
type Option func(*envtest.Environment) error

// WithAuditLog has the API server write an audit log to path (JSON lines):
// one entry per request of the named users, at level Metadata (who, verb,
// resource; no bodies), so that a benchmark can count requests as the API
// server sees them. Nobody else's requests are logged: each entry costs
// the API server a write.
func WithAuditLog(path string, users ...string) Option {
	return func(env *envtest.Environment) error {
		if len(users) == 0 {
			return errors.New("audit log: no users to log")
		}
		quoted := make([]string, len(users))
		for i, u := range users {
			quoted[i] = fmt.Sprintf("%q", u)
		}
		// Once per request, not twice: RequestReceived is the same
		// request again. Watches still log ResponseStarted and
		// ResponseComplete; CountRequests counts each request once.
		policy := fmt.Sprintf(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  users: [%s]
- level: None
`, strings.Join(quoted, ", "))
		policyPath := filepath.Join(filepath.Dir(path), "audit-policy.yaml")
		if err := os.WriteFile(policyPath, []byte(policy), 0o644); err != nil {
			return fmt.Errorf("audit policy: %w", err)
		}
		env.ControlPlane.GetAPIServer().Configure().
			Set("audit-policy-file", policyPath).
			Set("audit-log-path", path).
			Set("audit-log-format", "json")
		return nil
	}
}

// auditEvent is the part of an audit.k8s.io/v1 Event that CountRequests
// reads.
type auditEvent struct {
	AuditID    string `json:"auditID"`
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	RequestReceivedTimestamp time.Time `json:"requestReceivedTimestamp"`
}

// RequestCounts counts requests by user, then by "verb resource" such as
// "patch nodes", "create pods/eviction" or "get /healthz" (a path without
// a resource).
type RequestCounts map[string]map[string]int

// Total is the number of requests of a user.
func (c RequestCounts) Total(user string) int {
	n := 0
	for _, v := range c[user] {
		n += v
	}
	return n
}

// AuditLogSize is the audit log's size now: where CountRequests can start
// reading to see only what comes next.
func AuditLogSize(path string) (int64, error) {
	st, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("audit log: %w", err)
	}
	return st.Size(), nil
}

// CountRequests reads the audit log at path from byte offset and counts
// the requests the API server received in [from, to), each once (a watch
// has two entries, one when it starts and one when it ends).
func CountRequests(path string, offset int64, from, to time.Time) (RequestCounts, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	return countRequests(f, from, to)
}

func countRequests(r io.Reader, from, to time.Time) (RequestCounts, error) {
	counts := RequestCounts{}
	seen := map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e auditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("audit log line %q: %w", sc.Text(), err)
		}
		t := e.RequestReceivedTimestamp
		if seen[e.AuditID] || t.Before(from) || !t.Before(to) {
			continue
		}
		seen[e.AuditID] = true
		what := e.RequestURI
		if i := strings.IndexByte(what, '?'); i >= 0 {
			what = what[:i]
		}
		if e.ObjectRef != nil && e.ObjectRef.Resource != "" {
			what = e.ObjectRef.Resource
			if e.ObjectRef.Subresource != "" {
				what += "/" + e.ObjectRef.Subresource
			}
		}
		if counts[e.User.Username] == nil {
			counts[e.User.Username] = map[string]int{}
		}
		counts[e.User.Username][e.Verb+" "+what]++
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	return counts, nil
}
