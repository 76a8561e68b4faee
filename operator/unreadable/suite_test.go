package unreadable_test

import (
	"os"
	"testing"

	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/testbed"
)

// bed is the real API server the package's tests share. They change its
// CRDs for a moment (testbed.StoreUnchecked), so they have one of their own.
var bed *testbed.Bed

func TestMain(m *testing.M) { os.Exit(harness.Main(m, &bed)) }
