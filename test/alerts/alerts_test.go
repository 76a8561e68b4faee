package alerts_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/kmaint/kmaint/operator/metrics"
	"github.com/kmaint/kmaint/test/promtest"
)

// update rewrites prometheusrule.yaml from the plain rule files:
//
//	go test ./test/alerts -run TestPrometheusRule -update
var update = flag.Bool("update", false, "rewrite config/prometheus/prometheusrule.yaml from the plain rule files")

const (
	dir                = "../../config/prometheus"
	alertRules         = dir + "/kmaint-alerts.yaml"
	fragmentationRules = dir + "/fragmentation-rules.yaml"
	prometheusRule     = dir + "/prometheusrule.yaml"
)

// ruleFiles are the plain rule files, in the order their groups appear in
// the PrometheusRule.
var ruleFiles = []string{alertRules, fragmentationRules}

// TestPromtoolCheckRules: promtool accepts the rule files as Prometheus
// would load them.
func TestPromtoolCheckRules(t *testing.T) {
	promtool := promtest.Promtool(t)
	out, err := exec.Command(promtool, append([]string{"check", "rules"}, ruleFiles...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
}

// TestPromtoolTestRules runs the unit tests in config/prometheus/tests:
// each alert fires after its `for` with its labels and annotations, and
// its near misses do not fire.
func TestPromtoolTestRules(t *testing.T) {
	promtool := promtest.Promtool(t)
	tests, err := filepath.Glob(dir + "/tests/*_test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(tests) == 0 {
		t.Fatalf("no promtool tests in %s/tests", dir)
	}
	for _, f := range tests {
		t.Run(filepath.Base(f), func(t *testing.T) {
			out, err := exec.Command(promtool, "test", "rules", f).CombinedOutput()
			if err != nil {
				t.Fatalf("promtool test rules %s: %v\n%s", f, err, out)
			}
		})
	}
}

// ruleGroups is a plain Prometheus rule file. Groups stay generic, so that
// a field this test does not know of still has to be equal.
type ruleGroups struct {
	Groups []map[string]any `json:"groups"`
}

// prometheusRuleObject is the part of a monitoring.coreos.com/v1
// PrometheusRule the test checks.
type prometheusRuleObject struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Metadata   objectMeta `json:"metadata"`
	Spec       ruleGroups `json:"spec"`
}

// objectMeta is the part of an object's metadata the tests check.
type objectMeta struct {
	Name      string            `json:"name"`
	Namespace string            `json:"namespace"`
	Labels    map[string]string `json:"labels"`
}

// TestPrometheusRuleMatchesRuleFiles: the PrometheusRule's groups are the
// plain rule files' groups, field for field, so that the two ways of
// installing the rules cannot drift apart.
func TestPrometheusRuleMatchesRuleFiles(t *testing.T) {
	if *update {
		writePrometheusRule(t)
	}
	var want []map[string]any
	for _, f := range ruleFiles {
		var g ruleGroups
		decodeFile(t, f, &g)
		if len(g.Groups) == 0 {
			t.Fatalf("%s has no groups", f)
		}
		want = append(want, g.Groups...)
	}

	var pr prometheusRuleObject
	decodeFile(t, prometheusRule, &pr)
	if pr.APIVersion != "monitoring.coreos.com/v1" || pr.Kind != "PrometheusRule" {
		t.Errorf("%s is a %s %s, want a monitoring.coreos.com/v1 PrometheusRule", prometheusRule, pr.APIVersion, pr.Kind)
	}
	if pr.Metadata.Namespace != "kmaint-system" {
		t.Errorf("%s: namespace %q, want kmaint-system", prometheusRule, pr.Metadata.Namespace)
	}
	if pr.Metadata.Labels["release"] == "" {
		t.Errorf("%s: no release label for kube-prometheus-stack's ruleSelector", prometheusRule)
	}
	if reflect.DeepEqual(pr.Spec.Groups, want) {
		return
	}
	t.Errorf("%s differs from %s; run go test ./test/alerts -run TestPrometheusRule -update", prometheusRule, strings.Join(ruleFiles, " + "))
	if len(pr.Spec.Groups) != len(want) {
		t.Fatalf("%d groups, want %d", len(pr.Spec.Groups), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(pr.Spec.Groups[i], want[i]) {
			t.Errorf("group %d (%v) differs:\n%s", i, want[i]["name"], groupDiff(pr.Spec.Groups[i], want[i]))
		}
	}
}

// groupDiff shows the rules (or, failing that, the fields) in which two
// groups differ, as YAML.
func groupDiff(got, want map[string]any) string {
	var b strings.Builder
	show := func(what string, g, w any) {
		gy, _ := yaml.Marshal(g)
		wy, _ := yaml.Marshal(w)
		fmt.Fprintf(&b, "%s\n--- PrometheusRule\n%s--- rule file\n%s", what, gy, wy)
	}
	gr, gok := got["rules"].([]any)
	wr, wok := want["rules"].([]any)
	if !gok || !wok || len(gr) != len(wr) {
		show("the group", got, want)
		return b.String()
	}
	for i := range wr {
		if !reflect.DeepEqual(gr[i], wr[i]) {
			show(fmt.Sprintf("rule %d", i), gr[i], wr[i])
		}
	}
	for k := range want {
		if k != "rules" && !reflect.DeepEqual(got[k], want[k]) {
			show(k, got[k], want[k])
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			show(k, got[k], nil)
		}
	}
	return b.String()
}

func decodeFile(t *testing.T, path string, into any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, into); err != nil {
		// Strict only about the top level: the typed structs name the
		// fields this test reads, and unknown ones there are mistakes.
		t.Fatalf("decode %s: %v", path, err)
	}
}

// prometheusRuleHeader is the PrometheusRule up to its groups.
const prometheusRuleHeader = `# kmaint's Prometheus rules as a PrometheusRule for the Prometheus Operator
# (kube-prometheus-stack): the alerts of kmaint-alerts.yaml and the
# recording rule of fragmentation-rules.yaml, whose header comments explain
# them. Do not edit the groups here: edit those files and run
#   go test ./test/alerts -run TestPrometheusRule -update
# (test/alerts fails when this file and they differ).
#
# Prometheus picks up a PrometheusRule whose labels match its ruleSelector
# (and whose namespace its ruleNamespaceSelector allows). kube-prometheus-
# stack's default selects release: <its Helm release name>; change the label
# to match yours (kubectl get prometheus -A -o yaml | grep -A3 ruleSelector).
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: kmaint
  namespace: kmaint-system
  labels:
    app.kubernetes.io/name: kmaint
    app.kubernetes.io/component: monitoring
    release: kube-prometheus-stack
spec:
`

// writePrometheusRule writes prometheusrule.yaml: the header, then each rule
// file's groups indented under spec, comments and all.
func writePrometheusRule(t *testing.T) {
	t.Helper()
	var b bytes.Buffer
	b.WriteString(prometheusRuleHeader)
	for i, f := range ruleFiles {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		start := strings.Index(text, "\ngroups:\n")
		if start < 0 {
			t.Fatalf("%s: no top-level groups:", f)
		}
		lines := strings.Split(strings.TrimRight(text[start+1:], "\n"), "\n")
		if i > 0 {
			lines = lines[1:] // one groups: key
		}
		for _, l := range lines {
			if l != "" {
				b.WriteString("  ")
			}
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	if err := os.WriteFile(prometheusRule, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// ruleFile is a plain rule file, typed as far as the tests read it.
type ruleFile struct {
	Groups []struct {
		Name  string      `json:"name"`
		Rules []alertRule `json:"rules"`
	} `json:"groups"`
}

// alertRule is one rule of a rule file: an alert, or a recording rule.
type alertRule struct {
	Alert       string            `json:"alert"`
	Record      string            `json:"record"`
	Expr        string            `json:"expr"`
	For         string            `json:"for"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

// builtinMetrics are series kmaint does not export that the alerts may
// read: Prometheus's own per-target up.
var builtinMetrics = []string{"up"}

// TestAlertsNameKnownMetrics: every metric an alert's expression reads,
// and every kmaint_ metric its annotations query, is one kmaint exports,
// so a renamed metric cannot leave an alert silently matching nothing.
// Each alert also has what routing and people need.
func TestAlertsNameKnownMetrics(t *testing.T) {
	var f ruleFile
	decodeFile(t, alertRules, &f)
	var alerts int
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			name := r.Alert + r.Record
			names := metricNames(r.Expr)
			t.Logf("%s reads %v", name, names)
			if len(names) == 0 {
				t.Errorf("%s: found no metric in %q", name, r.Expr)
			}
			for _, a := range r.Annotations {
				names = append(names, regexp.MustCompile(`kmaint_[a-z0-9_]+`).FindAllString(a, -1)...)
			}
			for _, m := range names {
				if !knownMetric(m) {
					t.Errorf("%s reads %s, which is not in operator/metrics.All()", name, m)
				}
			}
			if r.Alert == "" {
				continue
			}
			alerts++
			if r.For == "" {
				t.Errorf("%s has no for", name)
			}
			if s := r.Labels["severity"]; s != "warning" && s != "critical" {
				t.Errorf("%s: severity %q, want warning or critical", name, s)
			}
			for _, a := range []string{"summary", "description"} {
				if r.Annotations[a] == "" {
					t.Errorf("%s has no %s annotation", name, a)
				}
			}
		}
	}
	if alerts == 0 {
		t.Fatalf("no alerts in %s", alertRules)
	}
}

// knownMetric reports whether name is a metric kmaint exports, a
// histogram's series (_bucket, _count, _sum) included, or a built-in one.
func knownMetric(name string) bool {
	all := append(metrics.All(), builtinMetrics...)
	if slices.Contains(all, name) {
		return true
	}
	for _, suffix := range []string{"_bucket", "_count", "_sum"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && slices.Contains(all, base) {
			return true
		}
	}
	return false
}

var (
	// promqlStrings are string literals: label values, printf formats.
	promqlStrings = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*'|`[^`]*`")
	// promqlMatchers are label matchers and range or subquery durations.
	promqlMatchers = regexp.MustCompile(`\{[^}]*\}|\[[^\]]*\]`)
	// promqlGrouping are the label lists of by, without, on, ignoring and
	// group_left/right.
	promqlGrouping = regexp.MustCompile(`(?i)\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	// promqlIdent is an identifier, or the tail of a number (1h, 1e3) that
	// metricNames skips.
	promqlIdent = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	// promqlCall is what follows a function or aggregation's name.
	promqlCall = regexp.MustCompile(`^\s*\(`)
	// promqlKeywords are the words of PromQL that are neither metrics nor
	// followed by a parenthesis.
	promqlKeywords = []string{"and", "or", "unless", "offset", "bool", "inf", "nan", "by", "without", "on", "ignoring", "group_left", "group_right", "atan2"}
)

// metricNames returns the metric names expr reads. It is a scanner, not a
// parser (the PromQL parser is not a dependency of this module): strings,
// matchers, durations and grouping lists are cut out, then an identifier
// followed by a parenthesis is a function or aggregation, a keyword is a
// keyword, and anything else is a metric.
func metricNames(expr string) []string {
	expr = promqlStrings.ReplaceAllString(expr, `""`)
	expr = promqlMatchers.ReplaceAllString(expr, " ")
	expr = promqlGrouping.ReplaceAllString(expr, " ")
	var names []string
	for _, loc := range promqlIdent.FindAllStringIndex(expr, -1) {
		ident := expr[loc[0]:loc[1]]
		if loc[0] > 0 && strings.ContainsAny(expr[loc[0]-1:loc[0]], "0123456789.") {
			continue // a number's unit or exponent
		}
		if promqlCall.MatchString(expr[loc[1]:]) || slices.Contains(promqlKeywords, strings.ToLower(ident)) || slices.Contains(names, ident) {
			continue
		}
		names = append(names, ident)
	}
	slices.Sort(names)
	return names
}

// TestMetricNames: the scanner finds the metrics of expressions shaped like
// the alerts', and only those, so that the check above can fail.
func TestMetricNames(t *testing.T) {
	tests := map[string]struct {
		expr string
		want []string // sorted
	}{
		"selector with matchers": {
			expr: `max by (node) (kmaint_daemon_state{state="degraded"}) == 1`,
			want: []string{"kmaint_daemon_state"},
		},
		"range, offset, set operators, grouping": {
			expr: `max by (pool) (kmaint_pool_pending_requests) > 0
				and on (pool) (max by (pool) (kmaint_pool_window_open) == 1)
				unless on (pool) sum by (pool) ((last_over_time(kmaint_admissions_total[1h]) unless kmaint_admissions_total offset 1h) or increase(kmaint_admissions_total[1h])) > 0`,
			want: []string{"kmaint_admissions_total", "kmaint_pool_pending_requests", "kmaint_pool_window_open"},
		},
		"subquery and histogram series": {
			expr: `changes((max by(node)(kmaint_daemon_boot_time_seconds))[1d:5m]) > 3 or kmaint_drain_duration_seconds_count`,
			want: []string{"kmaint_daemon_boot_time_seconds", "kmaint_drain_duration_seconds_count"},
		},
		"group_left and a label value that looks like a metric": {
			expr: `absent(up{job="kmaint_operator"} == 1) * on (pool) group_left (reason) kmaint_pool_blocked`,
			want: []string{"kmaint_pool_blocked", "up"},
		},
		"a misspelt metric is found": {
			expr: `sum(kmaint_pool_pendng_requests) > bool 0`,
			want: []string{"kmaint_pool_pendng_requests"},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := metricNames(tt.expr); !slices.Equal(got, tt.want) {
				t.Errorf("metricNames(%q) = %v, want %v", tt.expr, got, tt.want)
			}
		})
	}
	if knownMetric("kmaint_pool_pendng_requests") {
		t.Error("knownMetric accepts a misspelt name")
	}
}
