package v1alpha1_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

func TestCheckAndFitReason(t *testing.T) {
	cases := map[string]struct {
		reason string
		// wantErr is what CheckReason says; empty when the reason is fine.
		wantErr string
		// wantFit is what FitReason makes of it.
		wantFit string
	}{
		"plain":             {reason: "  kernel 6.12  ", wantFit: "kernel 6.12"},
		"a tab is text":     {reason: "kernel\t6.12", wantFit: "kernel\t6.12"},
		"empty":             {reason: " ", wantErr: "empty", wantFit: "no reason given"},
		"a newline":         {reason: "a\nb", wantErr: "control character", wantFit: `a\x0ab`},
		"a terminal escape": {reason: "\x1b[31mred", wantErr: "control character", wantFit: `\x1b[31mred`},
		"DEL":               {reason: "a\x7fb", wantErr: "control character", wantFit: `a\x7fb`},
		"invalid UTF-8":     {reason: "a\xffb", wantErr: "UTF-8", wantFit: "ab"},
		"too long":          {reason: strings.Repeat("é", 300), wantErr: "600 bytes long", wantFit: strings.Repeat("é", 254) + "…"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			err := v1alpha1.CheckReason(tc.reason)
			if tc.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
			} else {
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
			}
			fit := v1alpha1.FitReason(tc.reason)
			g.Expect(fit).To(Equal(tc.wantFit))
			g.Expect(len(fit)).To(BeNumerically("<=", v1alpha1.MaxReasonLength))
			g.Expect(v1alpha1.CheckReason(fit)).To(Succeed(), "what FitReason makes is always a valid reason")
		})
	}
}

func TestObjectNameAndLabelValue(t *testing.T) {
	g := NewWithT(t)
	g.Expect(v1alpha1.ObjectName("web-1", "host", "3f2a")).To(Equal("web-1-host-3f2a"))
	g.Expect(v1alpha1.ObjectName("ip-10-0-0-1.ec2.internal", "config", "config-ab")).To(Equal("ip-10-0-0-1.ec2.internal-config-config-ab"))
	g.Expect(v1alpha1.ObjectName("n", "host", "ID/With Spaces")).To(Equal("n-host-id-with-spaces"))
	long := v1alpha1.ObjectName(strings.Repeat("a", 250), "host", "x")
	g.Expect(validation.IsDNS1123Subdomain(long)).To(BeEmpty())
	g.Expect(long).NotTo(Equal(v1alpha1.ObjectName(strings.Repeat("a", 250), "host", "y")), "distinct parts keep distinct names")
	for _, bad := range []string{"a..b", "-.-", "x/../y", strings.Repeat("z", 300) + "."} {
		g.Expect(validation.IsDNS1123Subdomain(v1alpha1.ObjectName("n", bad))).To(BeEmpty(), bad)
	}
	g.Expect(v1alpha1.LabelValue("memory-fragmentation")).To(Equal("memory-fragmentation"))
	for _, bad := range []string{strings.Repeat("p", 253), "has space", "-x-", "...", ""} {
		v := v1alpha1.LabelValue(bad)
		g.Expect(validation.IsValidLabelValue(v)).To(BeEmpty(), bad)
	}
	g.Expect(v1alpha1.LabelValue(strings.Repeat("p", 100))).NotTo(Equal(v1alpha1.LabelValue(strings.Repeat("p", 101))))
}

func TestFitMessage(t *testing.T) {
	g := NewWithT(t)
	g.Expect(v1alpha1.FitMessage("short")).To(Equal("short"))
	long := v1alpha1.FitMessage(strings.Repeat("é", 20000))
	g.Expect(len(long)).To(BeNumerically("<=", 32768), "within the API's bound on a condition message")
	g.Expect(utf8.ValidString(long)).To(BeTrue(), "cut on a character boundary")
	g.Expect(long).To(HaveSuffix("…"))
}

func TestRequestID(t *testing.T) {
	g := NewWithT(t)
	nm := &v1alpha1.NodeMaintenance{}
	nm.UID = "uid-1"
	g.Expect(nm.RequestID()).To(Equal("uid-1"), "a request that starts in the API is journaled under its UID")
	nm.Labels = map[string]string{v1alpha1.RequestIDLabel: "host-abc"}
	g.Expect(nm.RequestID()).To(Equal("host-abc"), "a record made from the node, before its status is written")
	nm.Status.RequestID = "host-abc/long id"
	g.Expect(nm.RequestID()).To(Equal("host-abc/long id"), "the status carries every id")
}
