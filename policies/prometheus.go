package policies

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// Querier runs instant PromQL queries. Prometheus is the real one; tests of
// pure functions pass vectors directly.
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

// Prometheus queries a Prometheus server's HTTP API.
type Prometheus struct {
	api promv1.API
	// Timeout bounds each query, so that a hung server cannot stall a
	// reconcile.
	timeout time.Duration
}

// NewPrometheus returns a Querier for the server at address, e.g.
// "http://prometheus.monitoring:9090".
func NewPrometheus(address string, timeout time.Duration) (*Prometheus, error) {
	c, err := api.NewClient(api.Config{Address: address})
	if err != nil {
		return nil, fmt.Errorf("prometheus client for %q: %w", address, err)
	}
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	return &Prometheus{api: promv1.NewAPI(c), timeout: timeout}, nil
}

// Query implements Querier.
func (p *Prometheus) Query(ctx context.Context, query string, t time.Time) (model.Vector, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	value, _, err := p.api.Query(ctx, query, t, promv1.WithTimeout(p.timeout))
	if err != nil {
		var apiErr *promv1.Error
		var urlErr *url.Error
		switch {
		case errors.As(err, &apiErr) && (apiErr.Type == promv1.ErrBadData || apiErr.Type == promv1.ErrExec):
			return nil, &QueryError{Query: query, Msg: apiErr.Msg}
		case apiErr == nil && !errors.As(err, &urlErr) && ctx.Err() == nil:
			// Prometheus answered, and its result could not be decoded:
			// the client has no type for some results (a string), so
			// the query is at fault, not the connection.
			return nil, &QueryError{Query: query, Msg: fmt.Sprintf("result cannot be read as an instant vector: %v", err)}
		}
		return nil, fmt.Errorf("query prometheus: %w", err)
	}
	switch v := value.(type) {
	case model.Vector:
		return v, nil
	case *model.Scalar:
		// A scalar has no labels to name a node by; a blocking query may
		// still use one (any result blocks).
		return model.Vector{{Metric: model.Metric{}, Value: v.Value, Timestamp: v.Timestamp}}, nil
	default:
		return nil, &QueryError{Query: query, Msg: fmt.Sprintf("result is a %s, not an instant vector", value.Type())}
	}
}
