package policies

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/common/model"
)

// Querier runs instant PromQL queries. promapi.Client is the real one; tests
// of pure functions pass vectors directly.
type Querier interface {
	// Query evaluates query at t and returns its instant vector. Errors are
	// a *QueryError when Prometheus answered and refused the query, and
	// anything else when it could not be asked.
	Query(ctx context.Context, query string, t time.Time) (model.Vector, error)
}

// QueryError is Prometheus refusing a query: a parse error, an execution
// error, or a result that is not an instant vector. The query, not the
// connection, is at fault, so the fix is in the policy or pool.
type QueryError struct {
	Query string
	// Msg is Prometheus's own message, e.g. the parser's.
	Msg string
}

func (e *QueryError) Error() string {
	return fmt.Sprintf("query %q: %s", e.Query, e.Msg)
}

// IsQueryError reports whether err is a query the server refused, as opposed
// to a server that could not be reached.
func IsQueryError(err error) bool {
	var qe *QueryError
	return errors.As(err, &qe)
}

// maxSeriesText bounds how much of a series' labels a message quotes.
const maxSeriesText = 256

// SeriesText is a series' labels, cut to what a message (and the status
// field that quotes it) can hold.
func SeriesText(m model.Metric) string {
	s := m.String()
	if len(s) > maxSeriesText {
		s = s[:maxSeriesText] + "…"
	}
	return s
}
