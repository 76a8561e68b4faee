package chatrecv

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Mode is how the receiver answers.
type Mode int

// The modes.
const (
	// OK records the message and answers 204.
	OK Mode = iota
	// Fail answers 500 and records nothing, as a chat service in an
	// outage would.
	Fail
	// Hang never answers, until the test ends.
	Hang
)

// Message is one notification received.
type Message struct {
	Title string `json:"title"`
	Text  string `json:"message"`
}

// Receiver is a running receiver.
type Receiver struct {
	srv  *httptest.Server
	done chan struct{}

	mu       sync.Mutex
	mode     Mode
	messages []Message
	// requests counts every request, answered or not; hanging, those
	// held unanswered now.
	requests, hanging int
}

// Start starts a receiver that lives until the test ends.
func Start(t testing.TB) *Receiver {
	r := &Receiver{done: make(chan struct{})}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(func() {
		close(r.done) // unblocks hanging handlers, so that Close can return
		r.srv.Close()
	})
	return r
}

// URL is the shoutrrr URL that sends to the receiver: the generic webhook
// service, plain HTTP, a JSON body with the title and the message.
func (r *Receiver) URL() string {
	return "generic://" + strings.TrimPrefix(r.srv.URL, "http://") + "/hook?disabletls=yes&template=json"
}

// SetMode changes how the receiver answers from now on.
func (r *Receiver) SetMode(m Mode) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mode = m
}

// Messages returns the messages received so far.
func (r *Receiver) Messages() []Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Message(nil), r.messages...)
}

// Texts returns the texts of the messages received so far.
func (r *Receiver) Texts() []string {
	var texts []string
	for _, m := range r.Messages() {
		texts = append(texts, m.Text)
	}
	return texts
}

// Hanging counts the requests held unanswered now.
func (r *Receiver) Hanging() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.hanging
}

// Requests counts the requests received, whatever the answer.
func (r *Receiver) Requests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.requests++
	mode := r.mode
	r.mu.Unlock()
	switch mode {
	case Fail:
		http.Error(w, "chat is down", http.StatusInternalServerError)
		return
	case Hang:
		r.mu.Lock()
		r.hanging++
		r.mu.Unlock()
		select {
		case <-r.done:
		case <-req.Context().Done():
		}
		r.mu.Lock()
		r.hanging--
		r.mu.Unlock()
		return
	}
	var m Message
	if err := json.NewDecoder(req.Body).Decode(&m); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.messages = append(r.messages, m)
	r.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}
