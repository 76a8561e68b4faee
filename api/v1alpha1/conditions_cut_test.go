package v1alpha1_test

import (
	"testing"
	"unicode/utf8"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// CutAt never splits a character and keeps as much as fits.
func TestCutAtKeepsWholeCharacters(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"abc", 5, "abc"},
		{"abc", 3, "abc"},
		{"abc", 2, "ab"},
		{"aé", 2, "a"}, // é is two bytes
		{"aé", 3, "aé"},
		{"€€", 5, "€"}, // € is three bytes
		{"€", 2, ""},
		{"abc", 0, ""},
	} {
		got := v1alpha1.CutAt(c.s, c.n)
		if got != c.want || !utf8.ValidString(got) {
			t.Errorf("CutAt(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}
