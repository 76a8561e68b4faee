package protocol_test

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/test/gen"
)

// A hook's token is bound to its node, pool, boot, admission and point: an
// acknowledgement written for any other never opens it.
func TestHookTokensBindAcknowledgements(t *testing.T) {
	at := time.Date(2026, 12, 5, 7, 0, 0, 0, time.UTC)
	token := protocol.HookToken("n1", "db", "boot-1", at, protocol.BeforeDrain)
	others := map[string]string{
		"another node":      protocol.HookToken("n2", "db", "boot-1", at, protocol.BeforeDrain),
		"another pool":      protocol.HookToken("n1", "web", "boot-1", at, protocol.BeforeDrain),
		"another boot":      protocol.HookToken("n1", "db", "boot-2", at, protocol.BeforeDrain),
		"another admission": protocol.HookToken("n1", "db", "boot-1", at.Add(time.Nanosecond), protocol.BeforeDrain),
		"another point":     protocol.HookToken("n1", "db", "boot-1", at, protocol.BeforeReboot),
	}
	for what, other := range others {
		if other == token {
			t.Errorf("%s gives the same token", what)
		}
	}
	if again := protocol.HookToken("n1", "db", "boot-1", at.In(time.FixedZone("x", 3600)), protocol.BeforeDrain); again != token {
		t.Error("the same admission read in another time zone gives another token")
	}

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Annotations: map[string]string{
		protocol.AckPrefix + "db-failover": token,
		protocol.AckPrefix + "storage":     others["another boot"],
	}}}
	if !protocol.Acknowledged(node, "db-failover", token) {
		t.Error("the acknowledgement of this point does not open it")
	}
	if protocol.Acknowledged(node, "storage", token) {
		t.Error("an acknowledgement left from an earlier boot opens this one")
	}
	if protocol.Acknowledged(node, "absent", token) || protocol.Acknowledged(&corev1.Node{}, "db-failover", "") {
		t.Error("no acknowledgement, or no token, opens a hook")
	}
}

// A hook's Job name is the same for every operator that computes it, and a
// valid name however long or odd the hook's.
func TestHookJobNames(t *testing.T) {
	token := protocol.HookToken("n1", "db", "boot-1", time.Unix(0, 0), protocol.BeforeReboot)
	name := protocol.HookJobName("install-kernel", token, 1)
	if name != protocol.HookJobName("install-kernel", token, 1) || !strings.HasPrefix(name, "kmaint-install-kernel-") {
		t.Errorf("job name %q: want kmaint-install-kernel-<hash>, the same each time", name)
	}
	if name == protocol.HookJobName("install-kernel", protocol.HookToken("n1", "db", "boot-2", time.Unix(0, 0), protocol.BeforeReboot), 1) {
		t.Error("another boot's Job has the same name")
	}
	if name == protocol.HookJobName("install-kernel", token, 2) {
		t.Error("a second attempt's Job has the first one's name: it would never run")
	}
	for _, hook := range []string{"install-kernel", strings.Repeat("x", 300), "Upper_Case.and.dots", "-"} {
		n := protocol.HookJobName(hook, token, 10)
		if errs := validation.IsDNS1123Label(n); len(errs) > 0 {
			t.Errorf("job name %q of hook %q: %v", n, hook, errs)
		}
	}
}

// The hooks' record reads back as written, says which hooks wait, passed
// or failed, and one that cannot be read leaves the node unreadable, never
// taken for a point passed.
func TestHookRecordRoundTrip(t *testing.T) {
	at := time.Date(2026, 12, 5, 8, 0, 0, 0, time.UTC)
	rec := protocol.HookRecord{
		Pool: "db", Point: protocol.BeforeReboot, BootID: "boot-0", Token: protocol.HookToken("n1", "db", "boot-0", at, protocol.BeforeReboot), Since: at,
		Hooks: []protocol.HookProgress{
			{Name: "db-failover", Attempt: 1, Deadline: at.Add(time.Hour), Passed: at.Add(time.Minute)},
			{Name: "install-kernel", Attempt: 2, Deadline: at.Add(time.Hour)},
		},
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	protocol.RecordHooks(rec).Apply(node)
	s, err := protocol.Read(node)
	if err != nil {
		t.Fatal(err)
	}
	if s.Hook == nil || s.Hook.Token != rec.Token || s.Hook.Pool != "db" || len(s.Hook.Hooks) != 2 || !s.Hook.Hooks[0].Passed.Equal(at.Add(time.Minute)) {
		t.Fatalf("read back %+v, want %+v", s.Hook, rec)
	}
	// Admission scopes acknowledgements by the pool it reads from the
	// record's start (config/admission/hook-acknowledgements-policy.yaml).
	if raw := node.Annotations[protocol.Hook]; !strings.HasPrefix(raw, `{"pool":"db",`) {
		t.Errorf("the record starts %.40q; admission reads its pool from a start of {\"pool\":\"db\",", raw)
	}
	if s.Hook.Passed() || s.Hook.Failed() != nil || !slices.Equal(s.Hook.Waiting(), []string{"install-kernel"}) {
		t.Errorf("passed %v, failed %v, waiting %v: want install-kernel waiting", s.Hook.Passed(), s.Hook.Failed(), s.Hook.Waiting())
	}
	rec.Hooks[1].Failure = &protocol.HookFailure{Reason: "HookTimeout", Message: "no acknowledgement within 1h", Time: at.Add(time.Hour)}
	if f := rec.Failed(); f == nil || f.Name != "install-kernel" || len(rec.Waiting()) != 0 || rec.Passed() {
		t.Errorf("a failed hook: failed %+v, waiting %v", f, rec.Waiting())
	}
	rec.Hooks[1].Failure, rec.Hooks[1].Passed = nil, at.Add(2*time.Minute)
	if !rec.Passed() {
		t.Error("every hook passed, the point not")
	}

	protocol.ForgetHooks().Apply(node)
	if s, _ := protocol.Read(node); s.Hook != nil {
		t.Error("the record is still read after ForgetHooks")
	}
	node.Annotations[protocol.Hook] = "{not json"
	if s, err := protocol.Read(node); err == nil || s.Unreadable == nil {
		t.Error("a hooks record that cannot be read leaves the node readable")
	}
}

// An admission's end takes its acknowledgements with it, and nothing
// else of the hooks' owners.
func TestTheEndOfAnAdmissionForgetsItsAcknowledgements(t *testing.T) {
	for name, end := range map[string]protocol.Transition{
		"Release":  protocol.Release(),
		"Complete": protocol.Complete(nil, nil),
		"Abandon":  protocol.Abandon(protocol.DrainFailure{BootID: "boot-0"}),
	} {
		node := gen.Node("n1", gen.BootID("boot-1"))
		node.Annotations[protocol.AckPrefix+"db-stepdown"] = "token"
		node.Annotations["example.com/other"] = "kept"
		end.Apply(node)
		if _, ok := node.Annotations[protocol.AckPrefix+"db-stepdown"]; ok {
			t.Errorf("%s kept the acknowledgement", name)
		}
		if node.Annotations["example.com/other"] != "kept" {
			t.Errorf("%s removed another annotation", name)
		}
	}
}

// A node's token at a point is its admission's, pool included; a record of
// the same admission and point written before tokens bound the pool keeps
// its token, so that an upgraded operator neither runs its Jobs again (their
// names come from the token) nor asks again for its acknowledgements.
func TestHookTokenAtKeepsARecordWrittenBeforeTokensBoundThePool(t *testing.T) {
	at := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	node := gen.Node("n1", gen.BootID("boot-1"))
	protocol.Admit(protocol.Admission{BootID: "boot-1", Requests: []string{"r1"}, Time: at, Pool: "db", PoolUID: "uid-db"}).Apply(node)
	read := func() protocol.NodeState {
		t.Helper()
		s, err := protocol.Read(node)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	want := protocol.HookToken("n1", "db", "boot-1", at, protocol.BeforeDrain)
	if got := read().HookTokenAt(protocol.BeforeDrain, "boot-1"); got != want {
		t.Fatalf("token %s, want the admission's with its pool, %s", got, want)
	}
	if pool, uid := read().InFlightPool(); pool != "db" || uid != "uid-db" {
		t.Errorf("in flight in %s (%s), want db (uid-db)", pool, uid)
	}

	// The token an earlier version wrote: the same parts, no pool.
	earlier := tokenWithoutPool("n1", "boot-1", at, protocol.BeforeDrain)
	protocol.RecordHooks(protocol.HookRecord{Point: protocol.BeforeDrain, BootID: "boot-1", Token: earlier, Since: at}).Apply(node)
	if got := read().HookTokenAt(protocol.BeforeDrain, "boot-1"); got != earlier {
		t.Errorf("a record written before tokens bound the pool: token %s, want the one it was written with, %s", got, earlier)
	}
	if got := read().HookTokenAt(protocol.BeforeReboot, "boot-1"); got != protocol.HookToken("n1", "db", "boot-1", at, protocol.BeforeReboot) {
		t.Error("the next point of such a record keeps its old token too; want the new one")
	}
	// Not any token a record names: one of another admission, or a record
	// that names its pool, gets the admission's.
	for what, rec := range map[string]protocol.HookRecord{
		"another admission's": {Point: protocol.BeforeDrain, BootID: "boot-1", Token: tokenWithoutPool("n1", "boot-1", at.Add(-time.Hour), protocol.BeforeDrain)},
		"a forged one":        {Point: protocol.BeforeDrain, BootID: "boot-1", Token: "000000000000000000000000"},
		"one naming a pool":   {Pool: "web", Point: protocol.BeforeDrain, BootID: "boot-1", Token: earlier},
	} {
		protocol.RecordHooks(rec).Apply(node)
		if got := read().HookTokenAt(protocol.BeforeDrain, "boot-1"); got != want {
			t.Errorf("%s record: token %s, want the admission's %s", what, got, want)
		}
	}
}

// tokenWithoutPool is the token before it bound the pool, as the version
// before wrote it: sha256 of node, boot, admission time and point.
func tokenWithoutPool(node, bootID string, admitted time.Time, point protocol.HookPoint) string {
	sum := sha256.Sum256([]byte(strings.Join([]string{node, bootID, admitted.UTC().Format(time.RFC3339Nano), string(point)}, "\x00")))
	return hex.EncodeToString(sum[:12])
}

// A record names the hooks of its point and of the points its admission
// passed before it: the acknowledgements the operator reads and removes.
func TestHookRecordNames(t *testing.T) {
	rec := protocol.HookRecord{Point: protocol.BeforeReboot,
		Hooks:   []protocol.HookProgress{{Name: "storage"}},
		Earlier: []protocol.HookStretch{{Point: protocol.BeforeDrain, Hooks: []string{"db-stepdown"}}}}
	for hook, want := range map[string]bool{"storage": true, "db-stepdown": true, "other": false, "": false} {
		if got := rec.Names(hook); got != want {
			t.Errorf("Names(%q) = %t, want %t", hook, got, want)
		}
	}
}
