package layout

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/kmaint/kmaint/test/repo"
)

const module = "github.com/kmaint/kmaint/"

// floors says, for the packages under each folder, which of kmaint's
// folders they may import (their own always).
var floors = []struct {
	pattern string
	may     []string
}{
	{"./api/...", nil},
	{"./policies/...", []string{"api"}},
	{"./internal/...", []string{"api", "policies"}},
	{"./daemon/...", []string{"api", "internal"}},
	{"./cmd/kmaint-daemon/...", []string{"api", "internal", "daemon"}},
	{"./cmd/kubectl-kmaint/...", []string{"api", "internal", "policies"}},
	{"./operator/...", []string{"api", "internal", "policies"}},
}

// TestFloors fails when a package imports, directly or not, a kmaint folder
// above its floor: the daemon linking a controller, the API types reaching
// for a decision, a shared helper importing the operator.
func TestFloors(t *testing.T) {
	for _, f := range floors {
		own := strings.TrimSuffix(strings.TrimPrefix(f.pattern, "./"), "/...")
		allowed := append([]string{own}, f.may...)
		for _, dep := range deps(t, f.pattern) {
			rel := strings.TrimPrefix(dep, module)
			ok := false
			for _, a := range allowed {
				ok = ok || rel == a || strings.HasPrefix(rel, a+"/")
			}
			if !ok {
				t.Errorf("%s imports %s, above its floor (it may import %v)", f.pattern, rel, allowed)
			}
		}
	}
}

// deps lists kmaint's packages that the pattern's production packages
// import, directly or not, themselves left out.
func deps(t *testing.T, pattern string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-json=ImportPath", pattern)
	cmd.Dir = repo.Root()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pattern, err)
	}
	var pkgs []string
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p struct{ ImportPath string }
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		if strings.HasPrefix(p.ImportPath, module) {
			pkgs = append(pkgs, p.ImportPath)
		}
	}
	if len(pkgs) == 0 {
		t.Fatalf("go list -deps %s found no kmaint package", pattern)
	}
	return pkgs
}
