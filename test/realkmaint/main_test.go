package realkmaint

import (
	"os"
	"testing"

	"github.com/kmaint/kmaint/test/harness"
)

// TestMain sets controller-runtime's logger, which the tests' clients log
// through; the cluster needs no API server of harness.Main's.
func TestMain(m *testing.M) {
	harness.SetLogger()
	os.Exit(m.Run())
}
