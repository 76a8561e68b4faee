package promtest_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/kmaint/kmaint/policies"
	"github.com/kmaint/kmaint/policies/promapi"
	"github.com/kmaint/kmaint/test/promtest"
)

const metric = "kmaint_test_value"

// waitCtx bounds a wait for a scrape or an evaluation: a few 1s intervals
// are enough, and a loaded CI machine gets room to spare.
func waitCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// hasValue accepts a result with exactly one series carrying labels, whose
// value is want (NaN matches NaN).
func hasValue(labels map[string]string, want float64) func(model.Vector) bool {
	return func(v model.Vector) bool {
		got, ok := promtest.Value(v, labels)
		return ok && (got == want || math.IsNaN(got) && math.IsNaN(want))
	}
}

// TestScrapedValueFollowsExporter sets, changes, NaNs and deletes a series
// and sees each through the promapi adapter, labelled by its target.
func TestScrapedValueFollowsExporter(t *testing.T) {
	t.Parallel()
	exp := promtest.NewExporter(t)
	node1 := map[string]string{"node": "n1"}
	exp.Set(metric, node1, 42)
	srv := promtest.Start(t, promtest.Options{Targets: []string{exp.Address()}})
	ctx := waitCtx(t)

	// The target, not the exporter, names the instance.
	want := map[string]string{"node": "n1", "instance": exp.Address(), "job": "promtest"}
	for _, step := range []struct {
		set   func()
		value float64
	}{
		{func() {}, 42},
		{func() { exp.Set(metric, node1, 7) }, 7},
		{func() { exp.SetNaN(metric, node1) }, math.NaN()},
	} {
		step.set()
		if _, err := srv.WaitForValue(ctx, metric, hasValue(want, step.value)); err != nil {
			t.Fatal(err)
		}
	}

	if !exp.Delete(metric, node1) {
		t.Fatal("Delete found no series to delete")
	}
	// A series the exporter dropped is marked stale at the next scrape, so
	// it leaves the instant vector at once, not after the lookback delta.
	if _, err := srv.WaitForValue(ctx, metric, func(v model.Vector) bool { return len(v) == 0 }); err != nil {
		t.Fatal(err)
	}
	if exp.Delete(metric, node1) {
		t.Error("a second Delete of the same series found it again")
	}
}

// TestHonorLabels keeps the instance an exporter sets, so one exporter can
// stand for many hosts.
func TestHonorLabels(t *testing.T) {
	t.Parallel()
	exp := promtest.NewExporter(t)
	exp.Set(metric, map[string]string{"instance": "10.0.0.1:9100"}, 1)
	exp.Set(metric, map[string]string{"instance": "10.0.0.2:9100"}, 2)
	srv := promtest.Start(t, promtest.Options{Targets: []string{exp.Address()}, HonorLabels: true})

	_, err := srv.WaitForValue(waitCtx(t), metric, func(v model.Vector) bool {
		return len(v) == 2 &&
			hasValue(map[string]string{"instance": "10.0.0.1:9100"}, 1)(v) &&
			hasValue(map[string]string{"instance": "10.0.0.2:9100"}, 2)(v)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestUnreachableIsNotQueryError stops Prometheus: the adapter's error must
// say the server could not be asked, not that the query is wrong, since
// the operator treats the two differently (a broken query is the policy's
// fault). Restart brings the same server back with its data.
func TestUnreachableIsNotQueryError(t *testing.T) {
	t.Parallel()
	exp := promtest.NewExporter(t)
	exp.Set(metric, map[string]string{"node": "n1"}, 3)
	srv := promtest.Start(t, promtest.Options{Targets: []string{exp.Address()}})
	ctx := waitCtx(t)
	if _, err := srv.WaitForValue(ctx, metric, hasValue(map[string]string{"node": "n1"}, 3)); err != nil {
		t.Fatal(err)
	}
	scraped := time.Now()
	url := srv.URL()

	srv.Stop()
	_, err := srv.Querier().Query(ctx, metric, time.Now())
	if err == nil {
		t.Fatal("query of a stopped Prometheus succeeded")
	}
	if policies.IsQueryError(err) {
		t.Fatalf("unreachable Prometheus reported as a query error: %v", err)
	}

	// A fresh adapter that never reached the server says the same.
	q, err := promapi.New(url, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Query(ctx, metric, time.Now()); err == nil || policies.IsQueryError(err) {
		t.Fatalf("query of a stopped Prometheus: got %v, want an error that is not a QueryError", err)
	}

	srv.Restart()
	if srv.URL() != url {
		t.Errorf("URL after Restart = %s, want %s", srv.URL(), url)
	}
	// The sample scraped before the stop is still in storage.
	v, err := srv.Querier().Query(ctx, metric, scraped)
	if err != nil {
		t.Fatalf("query after restart: %v", err)
	}
	if !hasValue(map[string]string{"node": "n1"}, 3)(v) {
		t.Errorf("value at %s after restart = %v, want 3", scraped, v)
	}
}

// TestQueryErrors: a query Prometheus refuses is a *policies.QueryError
// carrying Prometheus's own message, and results that are not instant
// vectors are handled as the adapter documents.
func TestQueryErrors(t *testing.T) {
	t.Parallel()
	srv := promtest.Start(t, promtest.Options{})
	ctx := waitCtx(t)

	refused := map[string]struct {
		query string
		// wantMsg is part of the QueryError's Msg: the parser's or the
		// engine's message, or the adapter's for a wrong result type.
		wantMsg string
	}{
		"parse error":     {query: "sum(", wantMsg: "parse error: unclosed left parenthesis"},
		"bad selector":    {query: "foo{", wantMsg: "parse error: unexpected end of input inside braces"},
		"execution error": {query: `label_replace(vector(1), "x", "$1", "job", "(")`, wantMsg: "invalid regular expression in label_replace()"},
		"range vector":    {query: "up[1m]", wantMsg: "result is a matrix, not an instant vector"},
		"string":          {query: `"text"`, wantMsg: "result cannot be read as an instant vector"},
	}
	for name, tc := range refused {
		t.Run(name, func(t *testing.T) {
			_, err := srv.Querier().Query(ctx, tc.query, time.Now())
			var qe *policies.QueryError
			if !errors.As(err, &qe) {
				t.Fatalf("Query(%q) error = %v (%T), want a *policies.QueryError", tc.query, err, err)
			}
			if qe.Query != tc.query || !strings.Contains(qe.Msg, tc.wantMsg) {
				t.Errorf("QueryError = {Query: %q, Msg: %q}, want query %q and a message containing %q", qe.Query, qe.Msg, tc.query, tc.wantMsg)
			}
			if !policies.IsQueryError(err) {
				t.Error("IsQueryError = false for a *QueryError")
			}
		})
	}

	t.Run("scalar is one unlabelled sample", func(t *testing.T) {
		v, err := srv.Querier().Query(ctx, "scalar(vector(2.5))", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if len(v) != 1 || len(v[0].Metric) != 0 || v[0].Value != 2.5 {
			t.Errorf("result = %v, want one sample 2.5 with no labels", v)
		}
	})

	t.Run("WaitForValue gives up on a refused query", func(t *testing.T) {
		_, err := srv.WaitForValue(ctx, "sum(", func(model.Vector) bool { return true })
		if !policies.IsQueryError(err) {
			t.Errorf("WaitForValue error = %v, want a QueryError", err)
		}
	})
}
