package harness

import (
	"os/exec"
	"syscall"
	"testing"
)

// HogCPUs runs n processes that do nothing but burn CPU (`yes` writing to
// /dev/null), beside the test, until it ends: the load of a shared, noisy
// CI machine, where kmaint must be slower but never stuck. They are killed
// when the test ends, and with the test process should it die first.
func HogCPUs(t testing.TB, n int) {
	t.Helper()
	path, err := exec.LookPath("yes")
	if err != nil {
		t.Fatalf("no yes(1) to load the CPUs with: %v", err)
	}
	for range n {
		// No Stdout: exec connects it to /dev/null, so the hog costs this
		// process nothing.
		cmd := exec.Command(path)
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatalf("start a CPU hog: %v", err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
	}
}
