package quorum

import (
	"errors"
	"strings"
	"testing"
)

func TestAtRisk(t *testing.T) {
	healthy := []Member{{Pod: "etcd-a", Node: "a", Ready: true}, {Pod: "etcd-b", Node: "b", Ready: true}, {Pod: "etcd-c", Node: "c", Ready: true}}
	for name, tc := range map[string]struct {
		f    Facts
		says string
	}{
		"every member Ready, no other node down": {f: Facts{Members: healthy, Node: "a"}},
		"a member not Ready": {f: Facts{Members: []Member{healthy[0], {Pod: "etcd-c", Node: "c"}}, Node: "a"},
			says: "etcd member etcd-c on c is not Ready"},
		"another control-plane node down":      {f: Facts{Members: healthy, Unavailable: []string{"c"}, Node: "a"}, says: "control-plane node c is unavailable"},
		"the members cannot be listed":         {f: Facts{ListErr: errors.New("forbidden")}, says: "cannot be listed: forbidden"},
		"no member pod, the API server's etcd": {f: Facts{}},
		"no member pod, etcd not ready":        {f: Facts{ReadyzErr: errors.New("500")}, says: "etcd is not ready: 500"},
	} {
		got := AtRisk(tc.f)
		if tc.says == "" && got != "" || tc.says != "" && !strings.Contains(got, tc.says) {
			t.Errorf("%s: got %q, want %q", name, got, tc.says)
		}
	}
}
