package cmd

import (
	"fmt"
	"io"

	"k8s.io/cli-runtime/pkg/printers"
)

// table writes tab-separated lines as kubectl's aligned columns.
type table struct {
	tw interface {
		io.Writer
		Flush() error
	}
	err error
}

func newTable(w io.Writer) *table { return &table{tw: printers.GetNewTabWriter(w)} }

// line writes one row; the first write error sticks.
func (t *table) line(s string) {
	if t.err == nil {
		_, t.err = fmt.Fprintln(t.tw, s)
	}
}

func (t *table) flush() error {
	if t.err != nil {
		return t.err
	}
	return t.tw.Flush()
}
