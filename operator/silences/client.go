package silences

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Matcher is one label matcher of a silence.
type Matcher struct {
	Name    string `json:"name"`
	Value   string `json:"value"`
	IsRegex bool   `json:"isRegex"`
	IsEqual bool   `json:"isEqual"`
}

// Silence is a silence as Alertmanager holds it. State is Alertmanager's
// ("active", "pending", "expired"), empty in a silence to make.
type Silence struct {
	ID        string    `json:"id,omitempty"`
	Matchers  []Matcher `json:"matchers"`
	StartsAt  time.Time `json:"startsAt"`
	EndsAt    time.Time `json:"endsAt"`
	CreatedBy string    `json:"createdBy"`
	Comment   string    `json:"comment"`
	Status    *Status   `json:"status,omitempty"`
}

// Status is a silence's state.
type Status struct {
	State string `json:"state"`
}

// Expired reports whether Alertmanager says the silence has ended.
func (s Silence) Expired() bool { return s.Status != nil && s.Status.State == "expired" }

// ErrNotFound is a silence Alertmanager does not know; ErrExpired one
// that has ended.
var (
	ErrNotFound = errors.New("silence not found")
	ErrExpired  = errors.New("silence expired")
)

// StatusError is an answer of Alertmanager that is not a success.
type StatusError struct {
	Method, Path string
	Code         int
	Body         string
}

// maxBodyInError bounds what an error quotes of an answer: the error may
// end up in a condition or an event, and a proxy's error page is long.
const maxBodyInError = 256

// maxSilenceID bounds an ID kmaint records: Alertmanager's are UUIDs.
const maxSilenceID = 64

func (e *StatusError) Error() string {
	body := strings.TrimSpace(e.Body)
	if len(body) > maxBodyInError {
		body = body[:maxBodyInError] + "…"
	}
	return fmt.Sprintf("alertmanager %s %s: %d %s", e.Method, e.Path, e.Code, body)
}

// Client calls one Alertmanager. Authorize, when set, adds credentials to
// each request; a request it fails is not sent.
type Client struct {
	base      *url.URL
	http      *http.Client
	Authorize func(*http.Request) error
}

// New returns a client of the Alertmanager at base (e.g.
// https://alertmanager.monitoring:9093); httpClient nil uses one with a
// ten-second timeout.
func New(base string, httpClient *http.Client) (*Client, error) {
	u, err := url.Parse(strings.TrimSuffix(base, "/"))
	if err != nil {
		return nil, fmt.Errorf("alertmanager URL %q: %w", base, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("alertmanager URL %q: want http(s)://host[:port][/path]", base)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		// Credentials in a URL end up in logs, events and records: they
		// come from files (Options.CredentialsDir).
		return nil, fmt.Errorf("alertmanager URL %s: want no credentials, query or fragment in it", u.Redacted())
	}
	if httpClient == nil {
		httpClient = &http.Client{Timeout: 10 * time.Second}
	}
	return &Client{base: u, http: httpClient}, nil
}

// Name is the Alertmanager's URL, which names it in records, metrics and
// events.
func (c *Client) Name() string { return c.base.String() }

// Create makes a silence and returns its ID.
func (c *Client) Create(ctx context.Context, s Silence) (string, error) {
	s.ID, s.Status = "", nil
	return c.post(ctx, s)
}

// Get reads a silence; ErrNotFound when Alertmanager has none by that ID.
func (c *Client) Get(ctx context.Context, id string) (Silence, error) {
	var s Silence
	err := c.do(ctx, http.MethodGet, "/api/v2/silence/"+url.PathEscape(id), nil, &s)
	return s, err
}

// Extend moves an active silence's end to endsAt, keeping its matchers,
// start, author and comment, and returns the ID Alertmanager answers: the
// same when the silence was updated in place.
func (c *Client) Extend(ctx context.Context, id string, endsAt time.Time) (string, error) {
	s, err := c.Get(ctx, id)
	if err != nil {
		return "", err
	}
	if s.Expired() {
		return "", fmt.Errorf("extend silence %s: %w", id, ErrExpired)
	}
	s.EndsAt, s.Status = endsAt, nil
	return c.post(ctx, s)
}

// Expire ends a silence now. A silence already gone or expired is not an
// error.
func (c *Client) Expire(ctx context.Context, id string) error {
	err := c.do(ctx, http.MethodDelete, "/api/v2/silence/"+url.PathEscape(id), nil, nil)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// List returns the silences whose author is createdBy, expired ones
// included (until Alertmanager's retention drops them). Anyone who may
// make silences can name any author: a caller that adopts a silence as its
// own matches it to what it recorded first (its ID or comment key), never
// to the author alone.
func (c *Client) List(ctx context.Context, createdBy string) ([]Silence, error) {
	var all []Silence
	if err := c.do(ctx, http.MethodGet, "/api/v2/silences", nil, &all); err != nil {
		return nil, err
	}
	mine := all[:0]
	for _, s := range all {
		if s.CreatedBy == createdBy {
			mine = append(mine, s)
		}
	}
	return mine, nil
}

func (c *Client) post(ctx context.Context, s Silence) (string, error) {
	var answer struct {
		SilenceID string `json:"silenceID"`
	}
	if err := c.do(ctx, http.MethodPost, "/api/v2/silences", s, &answer); err != nil {
		return "", err
	}
	if answer.SilenceID == "" || len(answer.SilenceID) > maxSilenceID {
		// It goes into the node's record, which must stay readable.
		return "", fmt.Errorf("alertmanager POST /api/v2/silences: a silenceID of %d bytes in its answer, want 1 to %d", len(answer.SilenceID), maxSilenceID)
	}
	return answer.SilenceID, nil
}

// do sends one request and decodes a JSON answer into out (nil: none).
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base.String()+path, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Authorize != nil {
		if err := c.Authorize(req); err != nil {
			return fmt.Errorf("alertmanager %s %s: %w", method, path, err)
		}
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("alertmanager %s %s: %w", method, path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	// An answer is small; a larger one is not Alertmanager's.
	data, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return fmt.Errorf("alertmanager %s %s: read the answer: %w", method, path, err)
	}
	// Alertmanager 0.25 answers an unknown silence's expiry with a 500
	// that says "not found"; only a call on one silence is read so.
	oneSilence := strings.HasPrefix(path, "/api/v2/silence/")
	if resp.StatusCode == http.StatusNotFound || oneSilence && resp.StatusCode == http.StatusInternalServerError && strings.Contains(string(data), "not found") {
		return fmt.Errorf("alertmanager %s %s: %w", method, path, ErrNotFound)
	}
	if resp.StatusCode/100 != 2 {
		return &StatusError{Method: method, Path: path, Code: resp.StatusCode, Body: string(data)}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("alertmanager %s %s: decode the answer: %w", method, path, err)
	}
	return nil
}
