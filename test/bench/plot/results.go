package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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
	Rebooted   int    `json:"rebooted"`
	Unfinished bool   `json:"unfinished"`
	Date       string `json:"date"`
	Command    string `json:"command"`
	Commit     string `json:"commit"`
}

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
	slices.SortFunc(out, func(a, b result) int {
		return cmp.Or(cmp.Compare(a.Nodes, b.Nodes), cmp.Compare(a.MaxUnavailable, b.MaxUnavailable))
	})
	return out, nil
}
