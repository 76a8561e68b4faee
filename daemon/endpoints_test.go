package daemon_test

import (
	"io"
	"net"
	"net/http"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/kmaint/kmaint/test/harness"
)

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func get(g Gomega, url string) (int, string) {
	resp, err := http.Get(url)
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	return resp.StatusCode, string(b)
}

func TestDaemonServesProbesAndMetrics(t *testing.T) {
	g := NewWithT(t)
	metrics, probes := freeAddr(t), freeAddr(t)
	n := startNode(t, "endpoints", harness.NodeOptions{MetricsAddr: metrics, ProbeAddr: probes})

	g.Eventually(func(g Gomega) {
		code, _ := get(g, "http://"+probes+"/readyz")
		g.Expect(code).To(Equal(http.StatusOK))
		code, _ = get(g, "http://"+probes+"/healthz")
		g.Expect(code).To(Equal(http.StatusOK))
		_, body := get(g, "http://"+metrics+"/metrics")
		g.Expect(body).To(ContainSubstring(`kmaint_daemon_state{node="endpoints",state="idle"} 1`))
		g.Expect(body).To(MatchRegexp(`kmaint_daemon_boot_time_seconds{node="endpoints"} [0-9.e+]+`))
	}, timeout).Should(Succeed())

	requestReboot(t, n, "metrics")
	g.Eventually(func(g Gomega) {
		_, body := get(g, "http://"+metrics+"/metrics")
		g.Expect(body).To(ContainSubstring(`kmaint_daemon_requests_total{node="endpoints",source="host"} 1`))
		g.Expect(body).To(ContainSubstring(`kmaint_daemon_state{node="endpoints",state="requested"} 1`))
		g.Expect(body).To(ContainSubstring(`kmaint_daemon_outstanding_requests{node="endpoints"} 1`))
	}, timeout).Should(Succeed())
}
