package bench

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kmaint/kmaint/test/testbed"
)

// userConfig is a rest config for a user of the bed's API server of its
// own, a cluster admin, with the bed's client-side rate limits.
func userConfig(b *testing.B, user string) *rest.Config {
	kc, err := bed.Kubeconfig(user, "system:masters")
	if err != nil {
		b.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kc)
	if err != nil {
		b.Fatalf("kubeconfig of %s: %v", user, err)
	}
	cfg.QPS, cfg.Burst = bed.Config.QPS, bed.Config.Burst
	return cfg
}

// auditLogSize is where the audit log ends now, 0 without one.
func auditLogSize() (int64, error) {
	if auditLog == "" {
		return 0, nil
	}
	return testbed.AuditLogSize(auditLog)
}

// requestsByVerb counts, from the API server's audit log, the operator's
// and the daemons' requests received in [from, to), per reboot, by
// "verb resource[/subresource]". Both are nil without an audit log.
func requestsByVerb(offset int64, from, to time.Time, reboots int) (operator, daemons map[string]float64, err error) {
	if auditLog == "" {
		return nil, nil, nil
	}
	counts, err := testbed.CountRequests(auditLog, offset, from, to)
	if err != nil {
		return nil, nil, err
	}
	perReboot := func(byVerb map[string]int) map[string]float64 {
		out := map[string]float64{}
		for what, n := range byVerb {
			out[what] = math.Round(1000*float64(n)/float64(reboots)) / 1000
		}
		return out
	}
	return perReboot(counts[operatorUser]), perReboot(counts[daemonUser]), nil
}

// logRequests logs a breakdown of requests per reboot, most first.
func logRequests(b *testing.B, who string, byVerb map[string]float64) {
	if byVerb == nil {
		return
	}
	b.Logf("%s requests per reboot at the API server: %s", who, formatRequests(byVerb))
}

// formatRequests writes a breakdown as "total 20.1: patch nodes 4.1, ...",
// most first.
func formatRequests(byVerb map[string]float64) string {
	keys := slices.SortedFunc(maps.Keys(byVerb), func(a, b string) int {
		return cmp.Or(cmp.Compare(byVerb[b], byVerb[a]), cmp.Compare(a, b))
	})
	total := 0.0
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		total += byVerb[k]
		parts = append(parts, fmt.Sprintf("%s %.2f", k, byVerb[k]))
	}
	return fmt.Sprintf("total %.2f: %s", total, strings.Join(parts, ", "))
}
