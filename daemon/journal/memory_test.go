package journal

import (
	"slices"
	"testing"
)

// A daemon that starts in a new boot asks the journal whether it has seen
// that boot; journald has, from its own start messages, before the daemon
// writes anything.
func TestMemoryHasSeenABootBeforeAnyEntryOfIt(t *testing.T) {
	boot := "boot-1"
	m := NewMemory(func() string { return boot })
	if err := m.Append(Entry{Kind: KindRequest, ID: "r1", Reason: "before the reboot"}); err != nil {
		t.Fatal(err)
	}
	boot = "boot-2"
	if got, _ := m.Boots(); slices.Contains(got, "boot-2") {
		t.Fatalf("boots %v before the node booted boot-2", got)
	}
	m.Boot()
	m.Boot()
	if got, _ := m.Boots(); !slices.Equal(got, []string{"boot-1", "boot-2"}) {
		t.Fatalf("boots = %v, want [boot-1 boot-2]", got)
	}
}
