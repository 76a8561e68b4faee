package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// result is the part of a benchmark result (test/bench's result) that the
// picture shows.
type result struct {
	Nodes               int     `json:"nodes"`
	MaxUnavailable      int     `json:"maxUnavailable"`
	RebootSeconds       float64 `json:"rebootSeconds"`
	MakespanOverIdeal   float64 `json:"makespanOverIdeal"`
	SlotToApprovalP99Ms float64 `json:"slotToApprovalP99Ms"`
	// SlotToAdmissionP99Ms and MakespanOverIdealWithDrains are absent
	// (zero) in results made before drains had pods to evict.
	SlotToAdmissionP99Ms        float64 `json:"slotToAdmissionP99Ms"`
	MakespanOverIdealWithDrains float64 `json:"makespanOverIdealWithDrains"`
	OperatorPeakRSSMiB          float64 `json:"operatorPeakRSSMiB"`
	OperatorRequests            float64 `json:"operatorRequestsPerReboot"`
	DaemonRequests              float64 `json:"daemonRequestsPerReboot"`
	// Unfinished results did not finish within the bench's limit:
	// Rebooted nodes did, and MakespanOverIdeal is a lower bound.
	Rebooted   int  `json:"rebooted"`
	Unfinished bool `json:"unfinished"`
	// Dirty results were made from a work tree that differed from their
	// commit: the code they measured is in no commit.
	Dirty bool `json:"dirty"`
	// Event is true for the figures of one event per controller
	// (test/bench/results/event-*.json, make bench-controllers) at one
	// size, which have only the *Event*Ms.
	Event                 bool    `json:"-"`
	GateEventP50Ms        float64 `json:"-"`
	GateEventMeanMs       float64 `json:"-"`
	AftercareEventP50Ms   float64 `json:"-"`
	MaintenanceEventP50Ms float64 `json:"-"`
	Date                  string  `json:"date"`
	Command               string  `json:"command"`
	Commit                string  `json:"commit"`
}

// dirty reports whether the result was made from a work tree that
// differed from its commit: it says so, or its commit does, as results
// made before the field did.
func (r result) dirty() bool { return r.Dirty || strings.HasSuffix(r.Commit, "-dirty") }

// readResults reads every rolling-*.json in dir, fewest nodes first.
func readResults(dir string) ([]result, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "rolling-*.json"))
	if err != nil {
		return nil, err
	}
	var out []result
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		var r result
		if err := json.Unmarshal(data, &r); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		out = append(out, r)
	}
	events, err := readEventResults(dir)
	if err != nil {
		return nil, err
	}
	out = append(out, events...)
	slices.SortFunc(out, func(a, b result) int {
		return cmp.Or(cmp.Compare(a.Nodes, b.Nodes), compareBool(a.Event, b.Event), cmp.Compare(a.MaxUnavailable, b.MaxUnavailable))
	})
	return out, nil
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// eventResult is the part of a test/bench/perevent result the picture
// shows.
type eventResult struct {
	Controller string `json:"controller"`
	Command    string `json:"command"`
	Commit     string `json:"commit"`
	Date       string `json:"date"`
	Points     []struct {
		Nodes  int     `json:"nodes"`
		P50Ms  float64 `json:"eventP50Ms"`
		MeanMs float64 `json:"eventMeanMs"`
	} `json:"points"`
}

// readEventResults reads every event-*.json in dir into one result per
// size, with each controller's p50 and the gate's mean; the gate's command
// and commit name them.
func readEventResults(dir string) ([]result, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "event-*.json"))
	if err != nil {
		return nil, err
	}
	bySize := map[int]*result{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		var e eventResult
		if err := json.Unmarshal(data, &e); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		for _, pt := range e.Points {
			r := bySize[pt.Nodes]
			if r == nil {
				r = &result{Nodes: pt.Nodes, Event: true}
				bySize[pt.Nodes] = r
			}
			if r.Commit == "" || e.Controller == "gate" {
				r.Command, r.Commit, r.Date = e.Command, e.Commit, e.Date
			}
			switch e.Controller {
			case "gate":
				r.GateEventP50Ms, r.GateEventMeanMs = pt.P50Ms, pt.MeanMs
			case "aftercare":
				r.AftercareEventP50Ms = pt.P50Ms
			case "maintenance":
				r.MaintenanceEventP50Ms = pt.P50Ms
			}
		}
	}
	var out []result
	for _, r := range bySize {
		out = append(out, *r)
	}
	return out, nil
}
