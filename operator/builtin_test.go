package operator

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// The drains' clientset asks the API server for protobuf, and still takes
// JSON from one that answers in it.
func TestTheDrainsClientsetAsksForProtobuf(t *testing.T) {
	var mu sync.Mutex
	var accept []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		accept = append(accept, r.Header.Get("Accept"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"7"},"items":[]}`))
	}))
	defer srv.Close()
	cfg := &rest.Config{Host: srv.URL}
	cs, err := kubernetes.NewForConfig(builtinKinds(cfg))
	if err != nil {
		t.Fatal(err)
	}
	list, err := cs.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{Limit: 1})
	if err != nil {
		t.Fatalf("a JSON answer was not taken: %v", err)
	}
	if list.ResourceVersion != "7" {
		t.Errorf("read resourceVersion %q, want 7", list.ResourceVersion)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(accept) != 1 || !strings.HasPrefix(accept[0], "application/vnd.kubernetes.protobuf") {
		t.Errorf("asked with Accept %q, want protobuf first", accept)
	}
	if cfg.ContentType != "" || cfg.AcceptContentTypes != "" {
		t.Errorf("the manager's config was changed: %q, %q", cfg.ContentType, cfg.AcceptContentTypes)
	}
}
