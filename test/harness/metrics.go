package harness

import (
	"io"
	"net/http"

	. "github.com/onsi/gomega"
)

// Scrape returns what the Prometheus endpoint at addr (host:port, path
// /metrics) serves now, failing g when it cannot be read.
func Scrape(g Gomega, addr string) string {
	resp, err := http.Get("http://" + addr + "/metrics")
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK), "GET %s/metrics", addr)
	b, err := io.ReadAll(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	return string(b)
}
