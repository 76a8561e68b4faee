package dashboards

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// builders lists every dashboard by the file it renders to.
var builders = []struct {
	file  string
	build func() *dashboard.DashboardBuilder
}{
	{"fleet.json", fleet},
	{"policies.json", policies},
	{"node.json", node},
}

// File is one rendered dashboard.
type File struct {
	// Name is the file name in dashboards/, e.g. fleet.json.
	Name string
	// JSON is the dashboard as Grafana imports it.
	JSON []byte
}

// Build returns every kmaint dashboard, keyed by the file it renders to.
func Build() (map[string]dashboard.Dashboard, error) {
	out := map[string]dashboard.Dashboard{}
	for _, b := range builders {
		d, err := b.build().Build()
		if err != nil {
			return nil, fmt.Errorf("build dashboard %s: %w", b.file, err)
		}
		numberPanels(&d)
		out[b.file] = d
	}
	return out, nil
}

// Render returns every dashboard as indented JSON, in file name order.
func Render() ([]File, error) {
	ds, err := Build()
	if err != nil {
		return nil, err
	}
	var files []File
	for _, name := range slices.Sorted(maps.Keys(ds)) {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false) // keep PromQL's < and > readable
		enc.SetIndent("", "  ")
		if err := enc.Encode(ds[name]); err != nil {
			return nil, fmt.Errorf("render dashboard %s: %w", name, err)
		}
		files = append(files, File{Name: name, JSON: buf.Bytes()})
	}
	return files, nil
}

// numberPanels gives rows and panels ids 1, 2, 3... in layout order, so
// the JSON is stable and links to a panel (viewPanel=N) keep working.
func numberPanels(d *dashboard.Dashboard) {
	for i, p := range d.Panels {
		id := uint32(i + 1)
		switch {
		case p.Panel != nil:
			p.Panel.Id = &id
		case p.RowPanel != nil:
			p.RowPanel.Id = id
		}
	}
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

func stackNormal() *common.StackingConfigBuilder {
	return common.NewStackingConfigBuilder().Mode(common.StackingModeNormal)
}

func stackNone() *common.StackingConfigBuilder {
	return common.NewStackingConfigBuilder().Mode(common.StackingModeNone)
}
