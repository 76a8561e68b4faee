package realcluster

import (
	"context"
	"strings"
	"testing"
)

// A name that could lead the state directory, which Start empties and Stop
// and Cleanup remove, out of the clusters' own directory is refused before
// anything is touched; so is one that cannot be a cgroup's name.
func TestNamesOutsideTheClustersDirectoryRefused(t *testing.T) {
	for _, name := range []string{"../../etc", "a/b", ".", "..", "-x", "Kmaint", "a b", "x\x00", strings.Repeat("a", 41)} {
		cfg := Config{Name: name}
		if err := cfg.setDefaults(); err == nil || !strings.Contains(err.Error(), "cluster name") {
			t.Errorf("Start's config with name %q: %v, want the name refused", name, err)
		}
		if err := Cleanup(context.Background(), name, ""); err == nil || !strings.Contains(err.Error(), "cluster name") {
			t.Errorf("Cleanup of %q: %v, want the name refused", name, err)
		}
		if _, err := Remains(name, ""); err == nil {
			t.Errorf("Remains of %q accepted", name)
		}
	}
	for _, name := range []string{"kmaint", "realcluster-test", "demo-test", "kmaint-demo", strings.Repeat("a", 40)} {
		if err := checkName(name); err != nil {
			t.Errorf("cluster name %q refused: %v", name, err)
		}
	}
}
