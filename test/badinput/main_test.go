package badinput

import (
	"os"
	"testing"

	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/testbed"
)

// bed is the real API server every row talks to.
var bed *testbed.Bed

func TestMain(m *testing.M) {
	os.Exit(harness.Main(m, &bed))
}
