package dashboards

import (
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/bargauge"
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/statetimeline"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// Grafana unit ids used by the panels.
const (
	unitSeconds     = "s"
	unitPercent     = "percentunit" // 0..1 shown as 0..100 %
	unitShort       = "short"
	unitPerMinute   = "reqpm" // requests per minute
	unitCountPerMin = "cpm"   // counts per minute
)

// Colours by meaning, so every dashboard paints good and bad the same way.
const (
	colorGood    = "green"
	colorBad     = "red"
	colorWarn    = "orange"
	colorNeutral = "text"
)

// datasourceVar is the name of every dashboard's data source variable.
const datasourceVar = "datasource"

// datasource is the reference every panel and query uses: the Prometheus
// chosen in the dashboard's datasource variable.
func datasource() common.DataSourceRef {
	return common.DataSourceRef{Type: cog.ToPtr("prometheus"), Uid: cog.ToPtr("${" + datasourceVar + "}")}
}

// newDashboard starts a kmaint dashboard: uid, tags, the datasource
// variable and links to the other kmaint dashboards.
func newDashboard(uid, title, description string) *dashboard.DashboardBuilder {
	return dashboard.NewDashboardBuilder(title).
		Uid(uid).
		Description(description).
		Tags([]string{"kmaint"}).
		Editable().
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		Time("now-6h", "now").
		Timezone(common.TimeZoneBrowser).
		Refresh("30s").
		Link(dashboard.NewDashboardLinkBuilder("kmaint").
			Type(dashboard.DashboardLinkTypeDashboards).
			Tags([]string{"kmaint"}).
			AsDropdown(true).
			KeepTime(true).
			IncludeVars(false).
			TargetBlank(false).
			Icon("external link").
			Tooltip("").
			Url("")).
		Annotation(dashboard.NewAnnotationQueryBuilder().
			Name("Annotations & Alerts").
			Datasource(common.DataSourceRef{Type: cog.ToPtr("grafana"), Uid: cog.ToPtr("-- Grafana --")}).
			Type("dashboard").
			BuiltIn(1).
			Enable(true).
			Hide(true).
			IconColor("rgba(0, 211, 255, 1)")).
		WithVariable(dashboard.NewDatasourceVariableBuilder(datasourceVar).
			Label("Data source").
			Description("The Prometheus that scrapes kmaint-operator and kmaint-daemon.").
			Type("prometheus"))
}

// labelVariable is a query variable listing the values of label on metric.
func labelVariable(name, label, metric, description string, multi bool) *dashboard.QueryVariableBuilder {
	q := fmt.Sprintf("label_values(%s, %s)", metric, name)
	v := dashboard.NewQueryVariableBuilder(name).
		Label(label).
		Description(description).
		Datasource(datasource()).
		Query(dashboard.StringOrMap{String: cog.ToPtr(q)}).
		Definition(q).
		Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
		Sort(dashboard.VariableSortAlphabeticalAsc).
		Multi(multi).
		IncludeAll(multi)
	return v
}

// target is one PromQL query of a panel.
type target struct {
	expr   string
	legend string
	// instant asks for the latest value only, as a table: for table panels.
	instant bool
}

// q is a range query drawn as one series per result, named by legend.
func q(expr, legend string) target { return target{expr: expr, legend: legend} }

// targets builds a panel's queries, with RefIds A, B, C... in order.
func targets(ts []target) []cog.Builder[variants.Dataquery] {
	out := make([]cog.Builder[variants.Dataquery], 0, len(ts))
	for i, t := range ts {
		b := prometheus.NewDataqueryBuilder().
			RefId(string(rune('A' + i))).
			Datasource(datasource()).
			Expr(t.expr).
			EditorMode(prometheus.QueryEditorModeCode)
		if t.instant {
			b = b.Instant().Format(prometheus.PromQueryFormatTable).LegendFormat("__auto")
		} else {
			b = b.Range().Format(prometheus.PromQueryFormatTimeSeries).LegendFormat(t.legend)
		}
		out = append(out, b)
	}
	return out
}

// thresholds colours values from base up, then each step's colour from its
// value up.
func thresholds(base string, steps ...dashboard.Threshold) *dashboard.ThresholdsConfigBuilder {
	all := append([]dashboard.Threshold{{Color: base}}, steps...)
	return dashboard.NewThresholdsConfigBuilder().Mode(dashboard.ThresholdsModeAbsolute).Steps(all)
}

func step(value float64, color string) dashboard.Threshold {
	return dashboard.Threshold{Value: cog.ToPtr(value), Color: color}
}

// valueText maps exact values to a text and colour (for state timelines).
func valueText(texts map[string][2]string) []dashboard.ValueMapping {
	opts := map[string]dashboard.ValueMappingResult{}
	i := int32(0)
	for _, v := range sortedKeys(texts) {
		opts[v] = dashboard.ValueMappingResult{Text: cog.ToPtr(texts[v][0]), Color: cog.ToPtr(texts[v][1]), Index: cog.ToPtr(i)}
		i++
	}
	return []dashboard.ValueMapping{{ValueMap: &dashboard.ValueMap{Type: dashboard.MappingTypeValueToText, Options: opts}}}
}

func tableLegend() *common.VizLegendOptionsBuilder {
	return common.NewVizLegendOptionsBuilder().
		ShowLegend(true).
		DisplayMode(common.LegendDisplayModeTable).
		Placement(common.LegendPlacementBottom).
		Calcs([]string{"lastNotNull", "max"})
}

func listLegend() *common.VizLegendOptionsBuilder {
	return common.NewVizLegendOptionsBuilder().
		ShowLegend(true).
		DisplayMode(common.LegendDisplayModeList).
		Placement(common.LegendPlacementBottom).
		Calcs([]string{})
}

func multiTooltip() *common.VizTooltipOptionsBuilder {
	return common.NewVizTooltipOptionsBuilder().Mode(common.TooltipDisplayModeMulti).Sort(common.SortOrderDescending)
}

// timeSeries is a line chart, half a row wide.
func timeSeries(title, description, unit string, ts ...target) *timeseries.PanelBuilder {
	return timeseries.NewPanelBuilder().
		Title(title).
		Description(description).
		Datasource(datasource()).
		Targets(targets(ts)).
		Unit(unit).
		Min(0).
		Height(8).
		Span(12).
		LineWidth(1).
		FillOpacity(10).
		ShowPoints(common.VisibilityModeNever).
		Legend(tableLegend()).
		Tooltip(multiTooltip())
}

// bars is a time series drawn as bars: for counts of rare events (requests,
// failures, reboots) per interval.
func bars(title, description, unit string, ts ...target) *timeseries.PanelBuilder {
	return timeSeries(title, description, unit, ts...).
		DrawStyle(common.GraphDrawStyleBars).
		FillOpacity(80).
		Stacking(stackNormal())
}

// dashedLines draws the series whose name matches re as dashed red lines
// without fill: a limit (budget, threshold) against the values under it.
func dashedLines(p *timeseries.PanelBuilder, re string) *timeseries.PanelBuilder {
	return p.OverrideByRegexp(re, []dashboard.DynamicConfigValue{
		{Id: "color", Value: map[string]any{"mode": "fixed", "fixedColor": colorBad}},
		{Id: "custom.lineStyle", Value: map[string]any{"fill": "dash", "dash": []int{10, 10}}},
		{Id: "custom.lineWidth", Value: 2},
		{Id: "custom.fillOpacity", Value: 0},
	})
}

// statPanel is one big number, a sixth of a row wide.
func statPanel(title, description, unit string, t target, th *dashboard.ThresholdsConfigBuilder) *stat.PanelBuilder {
	return stat.NewPanelBuilder().
		Title(title).
		Description(description).
		Datasource(datasource()).
		Targets(targets([]target{t})).
		Unit(unit).
		Height(4).
		Span(4).
		Thresholds(th).
		Orientation(common.VizOrientationAuto).
		ColorMode(common.BigValueColorModeValue).
		GraphMode(common.BigValueGraphModeArea).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"}).Values(false))
}

// barGauge is one horizontal bar per series, half a row wide.
func barGauge(title, description, unit string, t target, th *dashboard.ThresholdsConfigBuilder) *bargauge.PanelBuilder {
	return bargauge.NewPanelBuilder().
		Title(title).
		Description(description).
		Datasource(datasource()).
		Targets(targets([]target{t})).
		Unit(unit).
		Height(8).
		Span(12).
		Thresholds(th).
		Orientation(common.VizOrientationHorizontal).
		DisplayMode(common.BarGaugeDisplayModeGradient).
		ShowUnfilled(true).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"}).Values(false))
}

// stateTimeline is one band per series, coloured by the value mappings.
func stateTimeline(title, description string, mappings []dashboard.ValueMapping, ts ...target) *statetimeline.PanelBuilder {
	return statetimeline.NewPanelBuilder().
		Title(title).
		Description(description).
		Datasource(datasource()).
		Targets(targets(ts)).
		Unit(unitShort).
		Height(8).
		Span(12).
		Mappings(mappings).
		Thresholds(thresholds(colorNeutral)).
		ColorScheme(dashboard.NewFieldColorBuilder().Mode(dashboard.FieldColorModeIdThresholds)).
		ShowValue(common.VisibilityModeAuto).
		MergeValues(true).
		RowHeight(0.9).
		FillOpacity(70).
		Legend(listLegend()).
		Tooltip(multiTooltip())
}

// instantTable lists the latest result of one instant query, with the
// columns named by the labels it keeps (and the Time and Value columns
// dropped).
func instantTable(title, description, expr string, labels ...string) *table.PanelBuilder {
	include := map[string]any{}
	order := map[string]any{}
	for i, l := range labels {
		include[l] = true
		order[l] = i
	}
	excluded := map[string]any{"Time": true, "Value": true, "__name__": true}
	return table.NewPanelBuilder().
		Title(title).
		Description(description).
		Datasource(datasource()).
		Targets(targets([]target{{expr: expr, instant: true}})).
		Unit(unitShort).
		Height(8).
		Span(12).
		Footer(common.NewTableFooterOptionsBuilder().Show(false).Reducer([]string{}).CountRows(false)).
		WithTransformation(dashboard.DataTransformerConfig{
			Id: "organize",
			Options: map[string]any{
				"excludeByName": excluded,
				"indexByName":   order,
				"renameByName":  map[string]any{},
				"includeByName": include,
			},
		})
}
