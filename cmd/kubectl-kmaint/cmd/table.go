package cmd

import (
	"fmt"
	"io"
	"strings"
	"unicode"

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

// line writes one row; the first write error sticks. Cells quote what
// others wrote (a daemon's state, a request's reason, a node's name): a
// control character in them (an escape sequence that recolours or clears
// the terminal, a newline that forges a row) or an invisible format
// character (a bidirectional override that reorders what is shown) is
// shown as U+FFFD instead. Tabs separate the cells.
func (t *table) line(s string) {
	if t.err == nil {
		_, t.err = fmt.Fprintln(t.tw, printable(s))
	}
}

// printable replaces the control and format characters of s but tabs.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r != '\t' && (unicode.IsControl(r) || unicode.Is(unicode.Cf, r)) {
			return unicode.ReplacementChar
		}
		return r
	}, s)
}

func (t *table) flush() error {
	if t.err != nil {
		return t.err
	}
	return t.tw.Flush()
}
