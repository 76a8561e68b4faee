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
		"a sentinel file":           {opts: Options{NodeName: "n", SentinelFile: "/host/run/reboot-required"}},
		"a sentinel file and a command": {
			opts:    Options{NodeName: "n", SentinelFile: "/f", SentinelCommand: []string{"needs-restarting", "-r"}},
			wantErr: "give one at most",
		},
		"a sentinel command and a report": {
			opts:    Options{NodeName: "n", SentinelReport: "/r", SentinelCommand: []string{"needs-restarting", "-r"}},
			wantErr: "give one at most",
		},
		"a sentinel interval of 1ms": {opts: Options{NodeName: "n", SentinelFile: "/f", SentinelInterval: time.Millisecond}, wantErr: "--sentinel-interval=1ms: must be between 1s and 24h0m0s"},
		"a sentinel interval of 48h": {opts: Options{NodeName: "n", SentinelFile: "/f", SentinelInterval: 48 * time.Hour}, wantErr: "--sentinel-interval"},
		"a sentinel interval of 24h": {opts: Options{NodeName: "n", SentinelFile: "/f", SentinelInterval: 24 * time.Hour}},
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
