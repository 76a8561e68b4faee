package v1alpha1_test

import (
	"strings"
	"testing"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

func TestSilenceSetsRenderForTheNode(t *testing.T) {
	set := v1alpha1.SilenceSet{Name: "node", Matchers: []string{
		`alertname=~"KubeNodeNotReady|KubeNodeUnreachable"`, `node="{{ .Node }}"`, `instance=~"{{.Node}}(:[0-9]+)?"`, `severity!="info"`, `job!~"kmaint.*"`,
	}}
	got, err := set.Render("worker-1.example.com")
	if err != nil {
		t.Fatal(err)
	}
	want := []v1alpha1.SilenceMatcher{
		{Name: "alertname", Value: "KubeNodeNotReady|KubeNodeUnreachable", Regex: true, Equal: true},
		{Name: "node", Value: "worker-1.example.com", Equal: true},
		// A node's dots are quoted in a regex: worker-1xexample would
		// match otherwise.
		{Name: "instance", Value: `worker-1\.example\.com(:[0-9]+)?`, Regex: true, Equal: true},
		{Name: "severity", Value: "info"},
		{Name: "job", Value: "kmaint.*", Regex: true},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("matcher %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestSilenceSetsThatCannotSilenceOneNodeAreRefused(t *testing.T) {
	for _, tc := range []struct {
		matchers []string
		says     string
	}{
		{[]string{`alertname="KubeNodeNotReady"`}, "no = or =~ matcher uses {{ .Node }}"},
		{[]string{`node!="{{ .Node }}"`}, "no = or =~ matcher uses {{ .Node }}"},
		{[]string{`node=~"({{ .Node }})?"`}, "matches an empty value"},
		{[]string{`node="{{ .Node }}"`, `pool="{{ .Pool }}"`}, "only {{ .Node }} may be templated"},
		{[]string{`node={{ .Node }}`}, "want name="},
		{[]string{`node="{{ .Node }}`}, "want name="},
		{[]string{`node="{{ .Node }}\q"`}, "not a double-quoted string"},
		{[]string{`node=~"{{ .Node }}(("`}, "does not compile"},
		{[]string{`0node="{{ .Node }}"`}, "want name="},
		{[]string{`node="{{ .Node }}"`, `x="` + strings.Repeat("y", 1100) + `"`}, "more than 1024"},
	} {
		s := &v1alpha1.Silences{Sets: []v1alpha1.SilenceSet{{Name: "s", Matchers: tc.matchers}}}
		err := s.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%q: got %v, want an error that says %q", tc.matchers, err, tc.says)
		}
	}
	var none *v1alpha1.Silences
	if err := none.Validate(); err != nil {
		t.Errorf("no silences: %v", err)
	}
}

func TestSilencesDefaults(t *testing.T) {
	var none *v1alpha1.Silences
	if none.Proceeds() || none.Lifetime() != v1alpha1.DefaultSilenceMaxDuration {
		t.Error("no silences: Hold and the default lifetime")
	}
	s := &v1alpha1.Silences{OnUnreachable: v1alpha1.SilencesProceed}
	if !s.Proceeds() {
		t.Error("Proceed proceeds")
	}
}
