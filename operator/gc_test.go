package operator

import (
	"runtime/debug"
	"testing"
)

func TestDefaultGCPercentLeavesAPersonsGOGC(t *testing.T) {
	was := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(was) })

	if SetDefaultGCPercent(func(string) (string, bool) { return "200", true }) {
		t.Fatal("applied the default over GOGC=200")
	}
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("GC percent %d with GOGC set, want it left at 100", got)
	}
	if !SetDefaultGCPercent(func(string) (string, bool) { return "", false }) {
		t.Fatal("did not apply the default without GOGC")
	}
	if got := debug.SetGCPercent(100); got != defaultGCPercent {
		t.Fatalf("GC percent %d without GOGC, want %d", got, defaultGCPercent)
	}
}
