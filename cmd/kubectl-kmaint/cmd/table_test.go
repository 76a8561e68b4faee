package cmd

import (
	"bytes"
	"testing"

	. "github.com/onsi/gomega"
)

// What a daemon or a requester wrote cannot drive the terminal, forge a
// row, or reorder what is shown.
func TestTableCellsArePrintable(t *testing.T) {
	g := NewWithT(t)
	var out bytes.Buffer
	tw := newTable(&out)
	tw.line("n1\tp\tRequested\t\x1b[2J\x1b[31mall fine\x1b[0m\nn2\tp\tIdle\t\u202eevil")
	g.Expect(tw.flush()).To(Succeed())
	s := out.String()
	g.Expect(s).NotTo(ContainSubstring("\x1b"))
	g.Expect(s).NotTo(ContainSubstring("\u202e"))
	g.Expect(s).To(ContainSubstring("all fine"))
	g.Expect(bytes.Count(out.Bytes(), []byte("\n"))).To(Equal(1), "one row: %q", s)
}
