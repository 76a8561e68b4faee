package daemon

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestOptionsValidate(t *testing.T) {
	cases := map[string]struct {
		opts Options
		// wantErr is a substring of the error; empty when the options are fine.
		wantErr string
	}{
		"a node name and defaults":  {opts: Options{NodeName: "n"}},
		"no node name":              {opts: Options{}, wantErr: "no node name"},
		"a negative reboot timeout": {opts: Options{NodeName: "n", RebootTimeout: -time.Second}, wantErr: "--reboot-timeout=-1s: must be positive"},
		"a reboot timeout of 1ns":   {opts: Options{NodeName: "n", RebootTimeout: time.Nanosecond}, wantErr: "at least 1s"},
		"a reboot timeout of 2s":    {opts: Options{NodeName: "n", RebootTimeout: 2 * time.Second}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			err := tc.opts.Validate()
			if tc.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
		})
	}
}
