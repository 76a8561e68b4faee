package dashboards

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/kmaint/kmaint/operator/metrics"
)

// sample fills the variables of every query the tests parse.
var sample = Sample{Pool: "workers", Policy: "memory-fragmentation", Node: "node-1"}

// histograms are the metrics of metrics.All that are histograms, whose
// series are name_bucket, name_sum and name_count.
var histograms = []string{metrics.DrainDurationSeconds, metrics.RebootDurationSeconds, metrics.PolicyEvaluationDurationSecs, metrics.HookDurationSeconds}

// The committed JSON is what the code builds now, and no other dashboard
// file lies beside it.
func TestCommittedJSONIsGenerated(t *testing.T) {
	files, err := Render()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, f.Name)
		committed, err := os.ReadFile(f.Name)
		if err != nil {
			t.Errorf("%s: %v; run go run ./dashboards/gen and commit the result", f.Name, err)
			continue
		}
		if !bytes.Equal(committed, f.JSON) {
			t.Errorf("%s differs from what the generator builds; run go run ./dashboards/gen and commit the result", f.Name)
		}
	}
	onDisk, err := filepath.Glob("*.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range onDisk {
		if !slices.Contains(names, f) {
			t.Errorf("%s is no dashboard the generator builds; remove it", f)
		}
	}
	if len(files) != 3 {
		t.Errorf("rendered %d dashboards, want fleet, policies and node", len(files))
	}
}

// Every query, its variables filled in, is PromQL that Prometheus parses.
func TestQueriesParse(t *testing.T) {
	qs := queries(t)
	for _, q := range qs {
		if _, err := parse(q.Expr); err != nil {
			t.Errorf("%s / %s (%s): %q: %v", q.Dashboard, q.Panel, q.RefID, q.Expr, err)
		}
	}
}

// Every metric a query selects is one kmaint exports (a histogram by its
// _bucket, _sum or _count series) or the fragmentation recording rule.
func TestQueriesSelectKnownMetrics(t *testing.T) {
	for _, q := range queries(t) {
		expr, err := parse(q.Expr)
		if err != nil {
			continue // TestQueriesParse reports it
		}
		names := selected(expr)
		if len(names) == 0 {
			t.Errorf("%s / %s (%s): %q selects no metric", q.Dashboard, q.Panel, q.RefID, q.Expr)
		}
		for _, name := range names {
			if !known(name) {
				t.Errorf("%s / %s (%s): %s is not in metrics.All() (nor the fragmentation rule)", q.Dashboard, q.Panel, q.RefID, name)
			}
		}
	}
}

func TestKnown(t *testing.T) {
	tests := map[string]bool{ // metric name: want known
		"kmaint_pool_nodes":                             true,
		"kmaint_reboot_duration_seconds_bucket":         true,
		"kmaint_policy_evaluation_duration_seconds_sum": true,
		"kmaint_drain_duration_seconds_count":           true,
		FragmentationRule:                               true,
		"kmaint_pool_nodes_bucket":                      false, // a gauge has no buckets
		"kmaint_pool_nodez":                             false,
		"node_buddyinfo_blocks":                         false, // the dashboards use the rule, not its input
		"":                                              false,
	}
	for name, want := range tests {
		if got := known(name); got != want {
			t.Errorf("known(%q) = %v, want %v", name, got, want)
		}
	}
}

// Every dashboard has a uid, title, the kmaint tag and a Prometheus
// datasource variable; every panel has a title, a description and queries
// against that variable, and fits the grid.
func TestDashboardsAreComplete(t *testing.T) {
	uids := map[string]string{}
	for _, file := range jsonFiles(t) {
		var d struct {
			UID, Title, Description string
			Tags                    []string
			Templating              struct{ List []map[string]any }
			Panels                  []map[string]any
		}
		decode(t, file, &d)
		if d.UID == "" || d.Title == "" || d.Description == "" {
			t.Errorf("%s: uid %q, title %q, description %q; want all three", file, d.UID, d.Title, d.Description)
		}
		if other, ok := uids[d.UID]; ok {
			t.Errorf("%s and %s share the uid %s", file, other, d.UID)
		}
		uids[d.UID] = file
		if !slices.Equal(d.Tags, []string{"kmaint"}) {
			t.Errorf("%s: tags %v, want [kmaint]", file, d.Tags)
		}
		if len(d.Templating.List) == 0 || d.Templating.List[0]["name"] != "datasource" ||
			d.Templating.List[0]["type"] != "datasource" || d.Templating.List[0]["query"] != "prometheus" {
			t.Errorf("%s: the first variable is %v, want datasource of type prometheus", file, first(d.Templating.List))
		}
		ids := map[float64]bool{}
		for _, p := range d.Panels {
			title, _ := p["title"].(string)
			id, _ := p["id"].(float64)
			if id == 0 || ids[id] {
				t.Errorf("%s: panel %q has id %v, want a unique id", file, title, p["id"])
			}
			ids[id] = true
			grid, _ := p["gridPos"].(map[string]any)
			if x, w := num(grid["x"]), num(grid["w"]); w == 0 || x+w > 24 || num(grid["h"]) == 0 {
				t.Errorf("%s: panel %q at %v does not fit the 24-column grid", file, title, grid)
			}
			if p["type"] == "row" {
				continue
			}
			if title == "" {
				t.Errorf("%s: panel %v has no title", file, p["id"])
			}
			if desc, _ := p["description"].(string); len(desc) < 20 {
				t.Errorf("%s: panel %q has description %q, want one that says what it shows", file, title, desc)
			}
			if !isVarDatasource(p["datasource"]) {
				t.Errorf("%s: panel %q has datasource %v, want the datasource variable", file, title, p["datasource"])
			}
			targets, _ := p["targets"].([]any)
			if len(targets) == 0 {
				t.Errorf("%s: panel %q has no queries", file, title)
			}
			for _, tg := range targets {
				tm, _ := tg.(map[string]any)
				if !isVarDatasource(tm["datasource"]) {
					t.Errorf("%s: panel %q query %v has datasource %v, want the datasource variable", file, title, tm["refId"], tm["datasource"])
				}
				if expr, _ := tm["expr"].(string); expr == "" {
					t.Errorf("%s: panel %q query %v has no expr", file, title, tm["refId"])
				}
			}
			if fc, _ := p["fieldConfig"].(map[string]any); fc == nil || fc["defaults"].(map[string]any)["unit"] == nil {
				t.Errorf("%s: panel %q has no unit", file, title)
			}
		}
	}
}

// Every variable a query uses is one its dashboard defines (or Grafana's
// own), and each query variable lists the values of a kmaint metric.
func TestVariables(t *testing.T) {
	ref := regexp.MustCompile(`\$\{?(\w+)\}?`)
	labelValues := regexp.MustCompile(`^label_values\((.+), *(\w+)\)$`)
	for _, file := range jsonFiles(t) {
		var d struct {
			Templating struct {
				List []struct{ Name, Type, Query, Definition string }
			}
			Panels []struct {
				Title   string
				Targets []struct{ Expr string }
			}
		}
		decode(t, file, &d)
		defined := map[string]bool{}
		for _, v := range d.Templating.List {
			defined[v.Name] = true
			if v.Type != "query" {
				continue
			}
			m := labelValues.FindStringSubmatch(v.Query)
			if m == nil || m[2] != v.Name || v.Definition != v.Query {
				t.Errorf("%s: variable %s has query %q, want label_values(<metric>, %s)", file, v.Name, v.Query, v.Name)
				continue
			}
			expr, err := parse(m[1])
			if err != nil {
				t.Errorf("%s: variable %s: %v", file, v.Name, err)
				continue
			}
			for _, name := range selected(expr) {
				if !known(name) {
					t.Errorf("%s: variable %s lists values of %s, not a kmaint metric", file, v.Name, name)
				}
			}
		}
		for _, p := range d.Panels {
			for _, tg := range p.Targets {
				for _, m := range ref.FindAllStringSubmatch(tg.Expr, -1) {
					if !defined[m[1]] && !strings.HasPrefix(m[1], "__") {
						t.Errorf("%s: panel %q uses $%s, which the dashboard does not define", file, p.Title, m[1])
					}
				}
			}
		}
	}
}

// The JSON reads back into the SDK's dashboard type, strictly: what
// Grafana's own schema tooling accepts.
func TestJSONReadsBack(t *testing.T) {
	plugins.RegisterDefaultPlugins()
	for _, file := range jsonFiles(t) {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var d dashboard.Dashboard
		if err := d.UnmarshalJSONStrict(raw); failed(err) {
			t.Errorf("%s: %v", file, err)
			continue
		}
		if err := d.Validate(); failed(err) {
			t.Errorf("%s: validate: %v", file, err)
		}
	}
}

func TestQueriesCoverEveryPanel(t *testing.T) {
	qs := queries(t)
	got := map[string]bool{}
	for _, q := range qs {
		got[q.Dashboard+"/"+q.Panel] = true
		for _, v := range []string{"$", "{{"} {
			if strings.Contains(q.Expr, v) {
				t.Errorf("%s / %s: %q still holds %s", q.Dashboard, q.Panel, q.Expr, v)
			}
		}
	}
	for _, file := range jsonFiles(t) {
		var d struct {
			UID    string
			Panels []struct{ Type, Title string }
		}
		decode(t, file, &d)
		for _, p := range d.Panels {
			if p.Type != "row" && !got[d.UID+"/"+p.Title] {
				t.Errorf("Queries returns nothing for %s / %s", d.UID, p.Title)
			}
		}
	}
	for _, q := range qs {
		if q.Dashboard == "kmaint-fleet" && !strings.Contains(q.Expr, `pool=~"workers"`) && !clusterWideOnly(t, q.Expr) {
			t.Errorf("fleet / %s: %q ignores the pool variable", q.Panel, q.Expr)
		}
	}
}

// clusterWide are the metrics without a pool label, which the fleet
// dashboard shows for the whole cluster whatever pools are picked.
var clusterWide = []string{
	metrics.ClusterPaused, metrics.NotificationEventsTotal, metrics.NotificationSummarizedTotal,
	metrics.NotificationMessagesTotal, metrics.NotificationReceivers,
}

// clusterWideOnly reports whether expr selects cluster-wide metrics only.
func clusterWideOnly(t *testing.T, expr string) bool {
	t.Helper()
	e, err := parse(expr)
	if err != nil {
		return false // TestQueriesParse reports it
	}
	names := selected(e)
	for _, n := range names {
		if !slices.Contains(clusterWide, n) {
			return false
		}
	}
	return len(names) > 0
}

func TestExpand(t *testing.T) {
	tests := map[string]struct {
		expr    string
		want    string // the expanded expr
		wantErr bool
	}{
		"every variable": {
			expr: `rate(x{pool=~"$pool", policy="${policy}", node="$node"}[$__rate_interval]) + y[$__interval] + z[$__range]`,
			want: `rate(x{pool=~"workers", policy="memory-fragmentation", node="node-1"}[1m]) + y[15s] + z[1h]`,
		},
		"none":    {expr: `up`, want: `up`},
		"unknown": {expr: `x{pool="$pools"}`, wantErr: true},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := sample.Expand(tt.expr)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Expand(%q) error %v, want error %v", tt.expr, err, tt.wantErr)
			}
			if !tt.wantErr && got != tt.want {
				t.Errorf("Expand(%q) = %q, want %q", tt.expr, got, tt.want)
			}
		})
	}
}

// failed tells a real error from the empty cog.BuildErrors the SDK's
// strict decoding returns (as a non-nil error) when all went well.
func failed(err error) bool {
	var errs cog.BuildErrors
	if errors.As(err, &errs) {
		return len(errs) > 0
	}
	return err != nil
}

func queries(t *testing.T) []Query {
	t.Helper()
	qs, err := Queries(sample)
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) < 30 {
		t.Fatalf("Queries returned %d queries, want every panel's", len(qs))
	}
	return qs
}

func parse(expr string) (parser.Expr, error) {
	return parser.NewParser(parser.Options{}).ParseExpr(expr)
}

// selected returns the metric names of every vector selector in expr.
func selected(expr parser.Expr) []string {
	var names []string
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name := vs.Name
		for _, m := range vs.LabelMatchers {
			if m.Name == "__name__" {
				name = m.Value
			}
		}
		names = append(names, name)
		return nil
	})
	return names
}

// known reports whether name is a series kmaint exports, or the
// fragmentation recording rule.
func known(name string) bool {
	if name == FragmentationRule || slices.Contains(metrics.All(), name) && name != "" {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && slices.Contains(histograms, base) {
			return true
		}
	}
	return false
}

func jsonFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboard JSON files (%v)", err)
	}
	return files
}

func decode(t *testing.T, file string, v any) {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

func isVarDatasource(v any) bool {
	ds, _ := v.(map[string]any)
	return ds["type"] == "prometheus" && ds["uid"] == "${datasource}"
}

func num(v any) float64 {
	f, _ := v.(float64)
	return f
}

func first(l []map[string]any) any {
	if len(l) == 0 {
		return nil
	}
	return l[0]
}
