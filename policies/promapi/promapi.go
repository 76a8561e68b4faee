package promapi

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/kmaint/kmaint/policies"
)

var _ policies.Querier = (*Client)(nil)

// Client queries a Prometheus server's HTTP API.
type Client struct {
	api promv1.API
	// Timeout bounds each query, so that a hung server cannot stall a
	// reconcile.
	timeout time.Duration
}

// New returns a Querier for the server at address, e.g.
// "http://prometheus.monitoring:9090".
func New(address string, timeout time.Duration) (*Client, error) {
	c, err := api.NewClient(api.Config{Address: address})
	if err != nil {
		return nil, fmt.Errorf("prometheus client for %q: %w", address, err)
	}
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	return &Client{api: promv1.NewAPI(c), timeout: timeout}, nil
}

// Query implements policies.Querier.
func (p *Client) Query(ctx context.Context, query string, t time.Time) (model.Vector, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	value, _, err := p.api.Query(ctx, query, t, promv1.WithTimeout(p.timeout))
	if err != nil {
		var apiErr *promv1.Error
		var urlErr *url.Error
		switch {
		case errors.As(err, &apiErr) && (apiErr.Type == promv1.ErrBadData || apiErr.Type == promv1.ErrExec):
			return nil, &policies.QueryError{Query: query, Msg: apiErr.Msg}
		case apiErr == nil && !errors.As(err, &urlErr) && ctx.Err() == nil:
			// Prometheus answered, and its result could not be decoded:
			// the client has no type for some results (a string), so
			// the query is at fault, not the connection.
			return nil, &policies.QueryError{Query: query, Msg: fmt.Sprintf("result cannot be read as an instant vector: %v", err)}
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
		return nil, &policies.QueryError{Query: query, Msg: fmt.Sprintf("result is a %s, not an instant vector", value.Type())}
	}
}
