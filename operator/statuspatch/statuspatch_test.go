package statuspatch

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

func TestWholeWritesZerosAndClearsEmptied(t *testing.T) {
	g := NewWithT(t)
	pool := &v1alpha1.MaintenancePool{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	pool.Status.Nodes = 3
	data, err := Whole{}.Data(pool)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(data)).To(ContainSubstring(`"nodes":3`))
	g.Expect(string(data)).To(ContainSubstring(`"unavailable":0`), "a zero count is written, not left out")

	policy := &v1alpha1.RebootPolicy{ObjectMeta: metav1.ObjectMeta{Name: "rp"}}
	data, err = Whole{}.Data(policy)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(data)).To(ContainSubstring(`"candidates":null`), "an emptied list is removed")
	g.Expect(string(data)).NotTo(ContainSubstring("metadata"), "only the status")

	policy.Status.WouldRequest = []string{"n1"}
	data, err = Whole{}.Data(policy)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(data)).To(ContainSubstring(`"wouldRequest":["n1"]`))

	// Every optional field of the type is cleared, with no list to keep:
	// a pool's records that ended leave its status.
	data, err = Whole{}.Data(pool)
	g.Expect(err).NotTo(HaveOccurred())
	for _, field := range []string{"blockingQuery", "halt", "freeze", "canaries", "conditions"} {
		g.Expect(string(data)).To(ContainSubstring(`"`+field+`":null`), field)
	}
}

// A field another controller writes is neither written nor cleared, and a
// locked patch names the version it was made from, so that the API server
// refuses it on any other.
func TestWholeLeavesAndLocks(t *testing.T) {
	g := NewWithT(t)
	pool := &v1alpha1.MaintenancePool{ObjectMeta: metav1.ObjectMeta{Name: "p", ResourceVersion: "42"}}
	data, err := Whole{Leave: []string{"settling", "halt"}}.Data(pool)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(data)).NotTo(Or(ContainSubstring(`"settling"`), ContainSubstring(`"halt"`)))
	g.Expect(string(data)).To(ContainSubstring(`"freeze":null`), "the fields it owns are still cleared")
	g.Expect(string(data)).NotTo(ContainSubstring("resourceVersion"), "unlocked")
	data, err = Whole{Lock: true}.Data(pool)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(data)).To(ContainSubstring(`"metadata":{"resourceVersion":"42"}`))
}
