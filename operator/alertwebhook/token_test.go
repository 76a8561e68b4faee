package alertwebhook_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	testingclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/operator/alertwebhook"
)

const tokenKey = "token"

// newSecretToken gives a SecretToken for a Secret of a unique name in
// "default", not yet created, read through a direct client as the manager's
// APIReader reads, on a fake clock.
func newSecretToken(t *testing.T) (*alertwebhook.SecretToken, *testingclock.FakeClock) {
	t.Helper()
	c := apiServer(t)
	clk := testingclock.NewFakeClock(time.Now())
	name := "alert-token-" + rand.String(6)
	t.Cleanup(func() {
		_ = c.Delete(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}})
	})
	return &alertwebhook.SecretToken{
		Reader: c, Namespace: "default", Name: name, Key: tokenKey,
		TTL: 10 * time.Second, Clock: clk,
	}, clk
}

func writeSecret(t *testing.T, s *alertwebhook.SecretToken, data map[string]string) {
	t.Helper()
	c := apiServer(t)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: s.Name}, StringData: data}
	err := c.Create(t.Context(), secret)
	if apierrors.IsAlreadyExists(err) {
		existing := &corev1.Secret{}
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(secret), existing); err != nil {
			t.Fatal(err)
		}
		existing.Data, existing.StringData = nil, data
		err = c.Update(t.Context(), existing)
	}
	if err != nil {
		t.Fatalf("write secret: %v", err)
	}
}

func TestSecretTokenReadsKey(t *testing.T) {
	s, _ := newSecretToken(t)
	// kubectl create secret --from-file keeps the file's newline.
	writeSecret(t, s, map[string]string{tokenKey: "  abc123\n", "other": "x"})
	got, err := s.Token(t.Context())
	if err != nil || got != "abc123" {
		t.Errorf("Token() = %q, %v; want \"abc123\", nil", got, err)
	}
}

func TestSecretTokenErrors(t *testing.T) {
	cases := map[string]struct {
		// data is the Secret's; nil creates no Secret.
		data map[string]string
		// wantInErr are parts of the error message, "<secret>" standing for
		// namespace/name.
		wantInErr []string
		// wantNotFound says the error is the API server's NotFound.
		wantNotFound bool
	}{
		"missing secret": {wantInErr: []string{"<secret>", "not found"}, wantNotFound: true},
		"missing key":    {data: map[string]string{"tokn": "abc"}, wantInErr: []string{"<secret>", `no key "token"`}},
		"empty token":    {data: map[string]string{tokenKey: ""}, wantInErr: []string{"<secret>", `"token"`, "empty"}},
		"blank token":    {data: map[string]string{tokenKey: " \n"}, wantInErr: []string{"<secret>", "empty"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, _ := newSecretToken(t)
			if tc.data != nil {
				writeSecret(t, s, tc.data)
			}
			got, err := s.Token(t.Context())
			if err == nil {
				t.Fatalf("Token() = %q, want an error", got)
			}
			for _, part := range tc.wantInErr {
				part = strings.ReplaceAll(part, "<secret>", s.Namespace+"/"+s.Name)
				if !strings.Contains(err.Error(), part) {
					t.Errorf("error %q does not contain %q", err, part)
				}
			}
			if apierrors.IsNotFound(err) != tc.wantNotFound {
				t.Errorf("IsNotFound(%v) = %v, want %v", err, !tc.wantNotFound, tc.wantNotFound)
			}
		})
	}
}

// A rotated token is used once the cached one is TTL old, not before.
func TestSecretTokenRotation(t *testing.T) {
	s, clk := newSecretToken(t)
	writeSecret(t, s, map[string]string{tokenKey: "old"})
	expectToken(t, s, "old")

	writeSecret(t, s, map[string]string{tokenKey: "new"})
	clk.Step(s.TTL - time.Millisecond)
	expectToken(t, s, "old")
	clk.Step(time.Millisecond)
	expectToken(t, s, "new")
}

// A failed read is kept for TTL too, so a flood of requests while the Secret
// is missing costs one API call per TTL; a Secret created later is used once
// that TTL is over.
func TestSecretTokenCachesErrors(t *testing.T) {
	s, clk := newSecretToken(t)
	if _, err := s.Token(t.Context()); err == nil {
		t.Fatal("Token() succeeded without a Secret")
	}
	writeSecret(t, s, map[string]string{tokenKey: "abc"})
	if _, err := s.Token(t.Context()); err == nil {
		t.Error("Token() read again before TTL was over")
	}
	clk.Step(s.TTL)
	expectToken(t, s, "abc")
}

// A cancelled caller's failure is not kept: the next caller reads again.
func TestSecretTokenCancelledCallerNotCached(t *testing.T) {
	s, _ := newSecretToken(t)
	writeSecret(t, s, map[string]string{tokenKey: "abc"})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.Token(ctx); err == nil {
		t.Fatal("Token() with a cancelled context succeeded")
	}
	expectToken(t, s, "abc")
}

// The handler with a SecretToken: requests with the Secret's token pass, and
// after a rotation only the new token does.
func TestHandlerWithSecretToken(t *testing.T) {
	s, clk := newSecretToken(t)
	sink := &recordingSink{}
	h := &alertwebhook.Handler{Tokens: s, Sink: sink, Logger: testr.New(t), Clock: receiverClock()}
	send := func(token string) int {
		req := httptest.NewRequest(http.MethodPost, "/alerts", bytes.NewReader(payload(t, firing("n1"))))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	if code := send("anything"); code != http.StatusServiceUnavailable {
		t.Errorf("without a Secret: code %d, want 503", code)
	}
	clk.Step(s.TTL)
	writeSecret(t, s, map[string]string{tokenKey: "first"})
	for token, want := range map[string]int{"first": 200, "second": 401} {
		if code := send(token); code != want {
			t.Errorf("token %q: code %d, want %d", token, code, want)
		}
	}
	writeSecret(t, s, map[string]string{tokenKey: "second"})
	clk.Step(s.TTL)
	for token, want := range map[string]int{"first": 401, "second": 200} {
		if code := send(token); code != want {
			t.Errorf("after rotation, token %q: code %d, want %d", token, code, want)
		}
	}
	if n := len(sink.batches()); n != 2 {
		t.Errorf("sink called %d times, want 2", n)
	}
}

func expectToken(t *testing.T, s *alertwebhook.SecretToken, want string) {
	t.Helper()
	got, err := s.Token(t.Context())
	if err != nil || got != want {
		t.Errorf("Token() = %q, %v; want %q, nil", got, err, want)
	}
}
