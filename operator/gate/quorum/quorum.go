package quorum

import (
	"fmt"
	"sort"
	"strings"
)

// Member is one etcd member, as its pod shows it.
type Member struct {
	Pod, Node string
	Ready     bool
}

// Facts is what the guard decides from.
type Facts struct {
	// Members are the etcd members' pods the guard's selector found;
	// ListErr says why they could not be listed.
	Members []Member
	ListErr error
	// ReadyzErr is the API server's /readyz/etcd answer when no member
	// was found (nil: ready); unused otherwise.
	ReadyzErr error
	// Unavailable names the pool's nodes, other than the one to admit or
	// approve, that are NotReady, cordoned or in flight.
	Unavailable []string
	// Node is the node to admit or approve; empty for an admission not
	// yet planned.
	Node string
}

// AtRisk says why one more control-plane node must not go down now;
// empty when it may. What cannot be read holds.
func AtRisk(f Facts) string {
	if len(f.Unavailable) > 0 {
		names := append([]string(nil), f.Unavailable...)
		sort.Strings(names)
		return fmt.Sprintf("control-plane node %s is unavailable (NotReady, cordoned or in flight): another must not go down with it", strings.Join(names, ", "))
	}
	if f.ListErr != nil {
		return fmt.Sprintf("the etcd members cannot be listed: %v", f.ListErr)
	}
	if len(f.Members) == 0 {
		if f.ReadyzErr != nil {
			return fmt.Sprintf("no etcd member pod found, and the API server's etcd is not ready: %v", f.ReadyzErr)
		}
		return ""
	}
	var unready []string
	for _, m := range f.Members {
		if !m.Ready {
			unready = append(unready, fmt.Sprintf("%s on %s", m.Pod, m.Node))
		}
	}
	if len(unready) == 0 {
		return ""
	}
	sort.Strings(unready)
	return fmt.Sprintf("etcd member %s is not Ready: the members left would lose quorum with one more down", strings.Join(unready, ", "))
}
