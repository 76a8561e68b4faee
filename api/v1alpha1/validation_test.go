package v1alpha1_test

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/testbed"
)

// bed is the real API server, with kmaint's CRDs installed, that every test
// in this package sends objects to.
var bed *testbed.Bed

func TestMain(m *testing.M) {
	var err error
	bed, err = testbed.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := bed.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

// object builds an unstructured kmaint object, so that a test can send values
// the Go types could not hold ("10x" as a duration, a string threshold ...),
// exactly as kubectl would.
func object(kind, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(testbed.GVK(kind))
	u.SetName(name)
	return u
}

// objectName turns a test case's name into a valid, unique object name.
func objectName(prefix, caseName string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(caseName) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteRune('-')
		}
	}
	// Names such as "0" and "0%" read alike once cleaned; a hash of the
	// original keeps them apart.
	h := fnv.New32a()
	h.Write([]byte(caseName))
	name := strings.Trim(prefix+"-"+b.String(), "-")
	if len(name) > 54 {
		name = strings.TrimRight(name[:54], "-")
	}
	return fmt.Sprintf("%s-%08x", name, h.Sum32())
}

func selector() map[string]any {
	return map[string]any{"matchLabels": map[string]any{"pool": "x"}}
}

// admissionCase is one object sent to the API server and what it must answer.
type admissionCase struct {
	// name is the object's name; empty derives one from the case's name.
	name string
	// spec is the object's spec as it would appear in YAML.
	spec map[string]any
	// wantErr is a substring of the message the API server must refuse the
	// object with, as an Invalid error; empty means the object is accepted.
	wantErr string
	// wantField is the field the refusal names, when it names one (rules on
	// a whole object or spec name the object or spec).
	wantField string
}

func runAdmissionCases(t *testing.T, kind string, cases map[string]admissionCase) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			objName := tc.name
			if objName == "" {
				objName = objectName(strings.ToLower(kind), name)
			}
			obj := object(kind, objName, tc.spec)
			err := bed.Client.Create(ctx, obj)
			if tc.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
				t.Cleanup(func() { _ = bed.Client.Delete(context.Background(), obj) })
				return
			}
			if err == nil {
				_ = bed.Client.Delete(ctx, obj)
			}
			g.Expect(err).To(HaveOccurred(), "the API server accepted an invalid %s", kind)
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want an Invalid error, got %v", err)
			g.Expect(err.Error()).To(ContainSubstring(tc.wantErr))
			if tc.wantField != "" {
				var status apierrors.APIStatus
				g.Expect(errors.As(err, &status)).To(BeTrue())
				g.Expect(status.Status().Details).NotTo(BeNil())
				g.Expect(status.Status().Details.Causes).To(ContainElement(HaveField("Field", tc.wantField)))
			}
		})
	}
}

func TestMaintenancePoolAdmission(t *testing.T) {
	const maxUnavailableMsg = "maxUnavailable must be an integer >= 0 or a percentage from 0% to 100%"
	const selectorMsg = "spec.nodeSelector is required, except on the pool named default"
	window := func(duration string) map[string]any {
		return map[string]any{"nodeSelector": selector(), "windows": []any{
			map[string]any{"schedule": "0 2 * * 1-5", "duration": duration},
		}}
	}
	withMax := func(v any) map[string]any {
		return map[string]any{"nodeSelector": selector(), "maxUnavailable": v}
	}
	drainTimeout := func(d string) map[string]any {
		return map[string]any{"nodeSelector": selector(), "drain": map[string]any{"timeout": d}}
	}
	runAdmissionCases(t, "MaintenancePool", map[string]admissionCase{
		"maxUnavailable -1":              {spec: withMax(-1), wantErr: maxUnavailableMsg, wantField: "spec.maxUnavailable"},
		"maxUnavailable 150%":            {spec: withMax("150%"), wantErr: maxUnavailableMsg, wantField: "spec.maxUnavailable"},
		"maxUnavailable abc":             {spec: withMax("abc"), wantErr: maxUnavailableMsg, wantField: "spec.maxUnavailable"},
		"maxUnavailable 10 string":       {spec: withMax("10"), wantErr: maxUnavailableMsg, wantField: "spec.maxUnavailable"},
		"maxUnavailable 101%":            {spec: withMax("101%"), wantErr: maxUnavailableMsg, wantField: "spec.maxUnavailable"},
		"maxUnavailable past int32":      {spec: withMax(int64(10000000000)), wantErr: "maxUnavailable must be at most 1000000 nodes", wantField: "spec.maxUnavailable"},
		"maxUnavailable 1000001":         {spec: withMax(1000001), wantErr: "maxUnavailable must be at most 1000000 nodes", wantField: "spec.maxUnavailable"},
		"maxUnavailable 1000000":         {spec: withMax(1000000)},
		"maxUnavailable 0":               {spec: withMax(0)},
		"maxUnavailable 3":               {spec: withMax(3)},
		"maxUnavailable 25%":             {spec: withMax("25%")},
		"maxUnavailable 0%":              {spec: withMax("0%")},
		"maxUnavailable 100%":            {spec: withMax("100%")},
		"no nodeSelector":                {spec: map[string]any{"maxUnavailable": 1}, wantErr: selectorMsg},
		"default with nodeSelector":      {name: v1alpha1.DefaultPoolName, spec: map[string]any{"nodeSelector": selector()}, wantErr: "must not have one"},
		"window duration 10x":            {spec: window("10x"), wantErr: "duration must be a positive Go duration", wantField: "spec.windows[0].duration"},
		"window duration -1h":            {spec: window("-1h"), wantErr: "duration must be a positive Go duration", wantField: "spec.windows[0].duration"},
		"window duration 0s":             {spec: window("0s"), wantErr: "duration must be a positive Go duration", wantField: "spec.windows[0].duration"},
		"window duration 4h":             {spec: window("4h")},
		"window without schedule":        {spec: map[string]any{"nodeSelector": selector(), "windows": []any{map[string]any{"duration": "4h"}}}, wantErr: "schedule: Required value", wantField: "spec.windows[0].schedule"},
		"drain timeout 0s":               {spec: drainTimeout("0s"), wantErr: "timeout must be a positive Go duration", wantField: "spec.drain.timeout"},
		"drain timeout bogus":            {spec: drainTimeout("bogus"), wantErr: "timeout must be a positive Go duration", wantField: "spec.drain.timeout"},
		"drain timeout 30m":              {spec: drainTimeout("30m")},
		"drain grace period past a week": {spec: map[string]any{"nodeSelector": selector(), "drain": map[string]any{"gracePeriodSeconds": int64(1) << 40}}, wantErr: "should be less than or equal to 604800", wantField: "spec.drain.gracePeriodSeconds"},
		"drain grace period -1":          {spec: map[string]any{"nodeSelector": selector(), "drain": map[string]any{"gracePeriodSeconds": -1}}, wantErr: "should be greater than or equal to 0", wantField: "spec.drain.gracePeriodSeconds"},
		"desiredConfig with a space":     {spec: map[string]any{"nodeSelector": selector(), "desiredConfig": "os 1.2"}, wantErr: "desiredConfig in body should match", wantField: "spec.desiredConfig"},
	})
}

// TestMaintenancePoolSelectorAdmission sends selectors that the label
// selector parser refuses: the schema refuses each of them, naming the
// field, so that no pool is stored whose nodes cannot be told.
func TestMaintenancePoolSelectorAdmission(t *testing.T) {
	const (
		operatorMsg = `Unsupported value: "Equals": supported values: "In", "NotIn", "Exists", "DoesNotExist"`
		valuesMsg   = "values must list at least one value for the operators In and NotIn, and none for Exists and DoesNotExist"
		keyMsg      = "key must be a label key"
		labelKeyMsg = "every key must be a label key"
		valueMsg    = "must be a label value"
	)
	expr := func(e map[string]any) map[string]any {
		return map[string]any{"nodeSelector": map[string]any{"matchExpressions": []any{e}}}
	}
	labels := func(l map[string]any) map[string]any {
		return map[string]any{"nodeSelector": map[string]any{"matchLabels": l}}
	}
	const exprField = "spec.nodeSelector.matchExpressions[0]"
	many := make([]any, 33)
	for i := range many {
		many[i] = map[string]any{"key": fmt.Sprintf("k%d", i), "operator": "Exists"}
	}
	runAdmissionCases(t, "MaintenancePool", map[string]admissionCase{
		"operator Equals":            {spec: expr(map[string]any{"key": "zone", "operator": "Equals", "values": []any{"a"}}), wantErr: operatorMsg, wantField: exprField + ".operator"},
		"operator in lower case":     {spec: expr(map[string]any{"key": "zone", "operator": "in", "values": []any{"a"}}), wantErr: "Unsupported value", wantField: exprField + ".operator"},
		"no operator":                {spec: expr(map[string]any{"key": "zone"}), wantErr: "Required value", wantField: exprField + ".operator"},
		"no key":                     {spec: expr(map[string]any{"operator": "Exists"}), wantErr: "Required value", wantField: exprField + ".key"},
		"In without values":          {spec: expr(map[string]any{"key": "zone", "operator": "In"}), wantErr: valuesMsg, wantField: exprField + ".values"},
		"In with an empty list":      {spec: expr(map[string]any{"key": "zone", "operator": "In", "values": []any{}}), wantErr: valuesMsg, wantField: exprField + ".values"},
		"NotIn without values":       {spec: expr(map[string]any{"key": "zone", "operator": "NotIn"}), wantErr: valuesMsg, wantField: exprField + ".values"},
		"Exists with values":         {spec: expr(map[string]any{"key": "zone", "operator": "Exists", "values": []any{"a"}}), wantErr: valuesMsg, wantField: exprField + ".values"},
		"DoesNotExist with values":   {spec: expr(map[string]any{"key": "zone", "operator": "DoesNotExist", "values": []any{"a"}}), wantErr: valuesMsg, wantField: exprField + ".values"},
		"key with a space":           {spec: expr(map[string]any{"key": "bad key", "operator": "Exists"}), wantErr: keyMsg, wantField: exprField + ".key"},
		"key with two slashes":       {spec: expr(map[string]any{"key": "a.io/b/c", "operator": "Exists"}), wantErr: keyMsg, wantField: exprField + ".key"},
		"key with an empty prefix":   {spec: expr(map[string]any{"key": "/zone", "operator": "Exists"}), wantErr: keyMsg, wantField: exprField + ".key"},
		"key with an upper prefix":   {spec: expr(map[string]any{"key": "Example.com/zone", "operator": "Exists"}), wantErr: keyMsg, wantField: exprField + ".key"},
		"key ending in a dash":       {spec: expr(map[string]any{"key": "zone-", "operator": "Exists"}), wantErr: keyMsg, wantField: exprField + ".key"},
		"key name of 64 characters":  {spec: expr(map[string]any{"key": strings.Repeat("k", 64), "operator": "Exists"}), wantErr: keyMsg, wantField: exprField + ".key"},
		"key prefix of 254":          {spec: expr(map[string]any{"key": strings.Repeat("p", 254) + "/k", "operator": "Exists"}), wantErr: keyMsg, wantField: exprField + ".key"},
		"key of 318 characters":      {spec: expr(map[string]any{"key": strings.Repeat("p", 254) + "/" + strings.Repeat("k", 63), "operator": "Exists"}), wantErr: "Too long", wantField: exprField + ".key"},
		"value with a space":         {spec: expr(map[string]any{"key": "zone", "operator": "In", "values": []any{"a", "b c"}}), wantErr: valueMsg, wantField: exprField + ".values[1]"},
		"value starting with a dot":  {spec: expr(map[string]any{"key": "zone", "operator": "NotIn", "values": []any{".a"}}), wantErr: valueMsg, wantField: exprField + ".values[0]"},
		"value of 64 characters":     {spec: expr(map[string]any{"key": "zone", "operator": "In", "values": []any{strings.Repeat("v", 64)}}), wantErr: "Too long", wantField: exprField + ".values[0]"},
		"65 values":                  {spec: expr(map[string]any{"key": "zone", "operator": "In", "values": make([]any, 65)}), wantErr: "Too many", wantField: exprField + ".values"},
		"33 expressions":             {spec: map[string]any{"nodeSelector": map[string]any{"matchExpressions": many}}, wantErr: "Too many", wantField: "spec.nodeSelector.matchExpressions"},
		"matchLabels key with space": {spec: labels(map[string]any{"bad key": "x"}), wantErr: labelKeyMsg, wantField: "spec.nodeSelector.matchLabels"},
		"matchLabels key too long":   {spec: labels(map[string]any{strings.Repeat("k", 64): "x"}), wantErr: labelKeyMsg, wantField: "spec.nodeSelector.matchLabels"},
		"matchLabels bad value":      {spec: labels(map[string]any{"pool": "-x"}), wantErr: valueMsg, wantField: "spec.nodeSelector.matchLabels[pool]"},
		"matchLabels long value":     {spec: labels(map[string]any{"pool": strings.Repeat("v", 64)}), wantErr: "Too long", wantField: "spec.nodeSelector.matchLabels.pool"},
		"In with values":             {spec: expr(map[string]any{"key": "zone", "operator": "In", "values": []any{"a", "b"}})},
		"Exists without values":      {spec: expr(map[string]any{"key": "kubernetes.io/hostname", "operator": "Exists"})},
		"DoesNotExist, empty list":   {spec: expr(map[string]any{"key": "zone", "operator": "DoesNotExist", "values": []any{}})},
		"longest key and value":      {spec: expr(map[string]any{"key": strings.Repeat("p", 253) + "/" + strings.Repeat("k", 63), "operator": "In", "values": []any{strings.Repeat("v", 63)}})},
		"matchLabels empty value":    {spec: labels(map[string]any{"example.com/pool": ""})},
	})
}

// TestDefaultPoolNeedsNoSelector runs on its own: only one pool can be named
// default.
func TestDefaultPoolNeedsNoSelector(t *testing.T) {
	runAdmissionCases(t, "MaintenancePool", map[string]admissionCase{
		"default without nodeSelector": {name: v1alpha1.DefaultPoolName, spec: map[string]any{"maxUnavailable": 2}},
	})
}

func TestRebootPolicyAdmission(t *testing.T) {
	const triggerMsg = "exactly one trigger must be set: prometheus, schedule, alert or nodeCondition"
	schedule := map[string]any{"cron": "0 3 1 * *"}
	alert := map[string]any{"alertName": "NodeNeedsReboot"}
	prometheus := func(threshold, comparison string) map[string]any {
		p := map[string]any{"query": "node_needs_reboot", "threshold": threshold}
		if comparison != "" {
			p["comparison"] = comparison
		}
		return map[string]any{"prometheus": p}
	}
	nodeCondition := func(kv ...any) map[string]any {
		c := map[string]any{"type": "KernelDeadlock"}
		for i := 0; i+1 < len(kv); i += 2 {
			c[kv[i].(string)] = kv[i+1]
		}
		return map[string]any{"nodeCondition": c}
	}
	with := func(kv ...any) map[string]any {
		spec := map[string]any{"schedule": schedule}
		for i := 0; i+1 < len(kv); i += 2 {
			spec[kv[i].(string)] = kv[i+1]
		}
		return spec
	}
	runAdmissionCases(t, "RebootPolicy", map[string]admissionCase{
		"no trigger":                                  {spec: map[string]any{"dryRun": true}, wantErr: triggerMsg, wantField: "spec"},
		"schedule and alert":                          {spec: map[string]any{"schedule": schedule, "alert": alert}, wantErr: triggerMsg, wantField: "spec"},
		"all three triggers":                          {spec: map[string]any{"schedule": schedule, "alert": alert, "prometheus": prometheus("1", "")["prometheus"]}, wantErr: triggerMsg, wantField: "spec"},
		"schedule only":                               {spec: with()},
		"alert only":                                  {spec: map[string]any{"alert": alert}},
		"prometheus only":                             {spec: prometheus("0.9", ">=")},
		"threshold abc":                               {spec: prometheus("abc", ""), wantErr: "threshold in body should match", wantField: "spec.prometheus.threshold"},
		"threshold 1e3":                               {spec: prometheus("1e3", "")},
		"threshold -.5":                               {spec: prometheus("-.5", "<")},
		"comparison !=":                               {spec: prometheus("1", "!="), wantErr: `Unsupported value: "!="`, wantField: "spec.prometheus.comparison"},
		"cooldown 1d":                                 {spec: with("cooldown", "1d"), wantErr: "cooldown must be a Go duration", wantField: "spec.cooldown"},
		"cooldown -1h":                                {spec: with("cooldown", "-1h"), wantErr: "cooldown must be a Go duration", wantField: "spec.cooldown"},
		"cooldown 168h":                               {spec: with("cooldown", "168h")},
		"maxConcurrentRequests 0":                     {spec: with("maxConcurrentRequests", 0), wantErr: "maxConcurrentRequests must be an integer >= 1", wantField: "spec.maxConcurrentRequests"},
		"maxConcurrentRequests 0%":                    {spec: with("maxConcurrentRequests", "0%"), wantErr: "maxConcurrentRequests must be an integer >= 1", wantField: "spec.maxConcurrentRequests"},
		"maxConcurrentRequests 2":                     {spec: with("maxConcurrentRequests", 2)},
		"maxConcurrentRequests past int32":            {spec: with("maxConcurrentRequests", int64(2147483648)), wantErr: "maxConcurrentRequests must be at most 1000000", wantField: "spec.maxConcurrentRequests"},
		"maxConcurrentRequests 10%":                   {spec: with("maxConcurrentRequests", "10%")},
		"interval 500ms":                              {spec: map[string]any{"prometheus": map[string]any{"query": "q", "threshold": "1", "interval": "500ms"}}, wantErr: "interval must be a Go duration of at least 1s", wantField: "spec.prometheus.interval"},
		"matchNodeBy Label":                           {spec: map[string]any{"alert": map[string]any{"alertName": "A", "matchNodeBy": "Label"}}, wantErr: `Unsupported value: "Label"`, wantField: "spec.alert.matchNodeBy"},
		"window duration 10x policy":                  {spec: with("windows", []any{map[string]any{"schedule": "0 2 * * *", "duration": "10x"}}), wantErr: "duration must be a positive Go duration", wantField: "spec.windows[0].duration"},
		"nodeCondition only":                          {spec: nodeCondition()},
		"nodeCondition prefixed, Unknown, for a year": {spec: nodeCondition("type", "example.com/DiskFailing", "status", "Unknown", "for", "8760h")},
		"nodeCondition and alert":                     {spec: map[string]any{"nodeCondition": nodeCondition()["nodeCondition"], "alert": alert}, wantErr: triggerMsg, wantField: "spec"},
		"nodeCondition for 8761h":                     {spec: nodeCondition("for", "8761h"), wantErr: "for must be a Go duration from 0s to 8760h", wantField: "spec.nodeCondition.for"},
		"nodeCondition for -1s":                       {spec: nodeCondition("for", "-1s"), wantErr: "for must be a Go duration from 0s to 8760h", wantField: "spec.nodeCondition.for"},
		"nodeCondition status true":                   {spec: nodeCondition("status", "true"), wantErr: `Unsupported value: "true"`, wantField: "spec.nodeCondition.status"},
		"nodeCondition type with a space":             {spec: nodeCondition("type", "Kernel Deadlock"), wantErr: "spec.nodeCondition.type in body should match", wantField: "spec.nodeCondition.type"},
		"nodeCondition type of 317":                   {spec: nodeCondition("type", strings.Repeat("K", 317)), wantErr: "may not be more than 316", wantField: "spec.nodeCondition.type"},
	})
}

func TestNodeMaintenanceAdmission(t *testing.T) {
	nm := func(kv ...any) map[string]any {
		spec := map[string]any{"nodeName": "n1", "reason": "kernel update"}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] == nil {
				delete(spec, kv[i].(string))
				continue
			}
			spec[kv[i].(string)] = kv[i+1]
		}
		return spec
	}
	runAdmissionCases(t, "NodeMaintenance", map[string]admissionCase{
		"no nodeName":                   {spec: nm("nodeName", nil), wantErr: "spec.nodeName: Required value", wantField: "spec.nodeName"},
		"empty nodeName":                {spec: nm("nodeName", ""), wantErr: "spec.nodeName in body should be at least 1 chars long", wantField: "spec.nodeName"},
		"no reason":                     {spec: nm("reason", nil), wantErr: "spec.reason: Required value", wantField: "spec.reason"},
		"empty reason":                  {spec: nm("reason", ""), wantErr: "spec.reason in body should be at least 1 chars long", wantField: "spec.reason"},
		"reason of 513":                 {spec: nm("reason", strings.Repeat("r", 513)), wantErr: "may not be more than 512", wantField: "spec.reason"},
		"reason of 512":                 {spec: nm("reason", strings.Repeat("r", 512))},
		"reason with a newline":         {spec: nm("reason", "kernel\nSucceeded: forged line"), wantErr: "spec.reason in body should match", wantField: "spec.reason"},
		"reason with a terminal escape": {spec: nm("reason", "\x1b[31mkernel"), wantErr: "spec.reason in body should match", wantField: "spec.reason"},
		"reason with a NUL":             {spec: nm("reason", "a\x00b"), wantErr: "spec.reason in body should match", wantField: "spec.reason"},
		"reason with a tab":             {spec: nm("reason", "kernel\t6.12")},
		"source magic":                  {spec: nm("source", "magic"), wantErr: `Unsupported value: "magic"`, wantField: "spec.source"},
		"source host":                   {spec: nm("source", "host")},
		"type Drain":                    {spec: nm("type", "Drain"), wantErr: `Unsupported value: "Drain"`, wantField: "spec.type"},
		"ignoreWindows true":            {spec: nm("ignoreWindows", true)},
	})
}

// TestNodeMaintenanceUpdates checks the transition rules: a request names its
// node, type and source for good, while the rest of its spec may change.
func TestNodeMaintenanceUpdates(t *testing.T) {
	cases := map[string]struct {
		// change edits the spec of a stored, valid NodeMaintenance.
		change func(spec map[string]any)
		// wantErr is a substring of the Invalid error the update must fail
		// with; empty means the update is accepted.
		wantErr string
	}{
		"nodeName changed": {
			change:  func(s map[string]any) { s["nodeName"] = "n2" },
			wantErr: "nodeName is immutable: create a new NodeMaintenance for another node",
		},
		"source changed": {
			change:  func(s map[string]any) { s["source"] = "host" },
			wantErr: "source is immutable",
		},
		"ignoreWindows changed": {
			change: func(s map[string]any) { s["ignoreWindows"] = true },
		},
		"reason changed": {
			change: func(s map[string]any) { s["reason"] = "another reason" },
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			obj := object("NodeMaintenance", objectName("nm-update", name), map[string]any{"nodeName": "n1", "reason": "kernel update"})
			g.Expect(bed.Client.Create(ctx, obj)).To(Succeed())
			t.Cleanup(func() { _ = bed.Client.Delete(context.Background(), obj) })

			spec, _, _ := unstructured.NestedMap(obj.Object, "spec")
			tc.change(spec)
			g.Expect(unstructured.SetNestedMap(obj.Object, spec, "spec")).To(Succeed())
			err := bed.Client.Update(ctx, obj)

			stored := &v1alpha1.NodeMaintenance{}
			g.Expect(bed.Client.Get(ctx, types.NamespacedName{Name: obj.GetName()}, stored)).To(Succeed())
			if tc.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
				want, _, _ := unstructured.NestedMap(obj.Object, "spec")
				got, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&stored.Spec)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(got).To(Equal(want), "the update is stored")
				return
			}
			g.Expect(err).To(HaveOccurred(), "the API server accepted an update it must refuse")
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want an Invalid error, got %v", err)
			g.Expect(err.Error()).To(ContainSubstring(tc.wantErr))
			g.Expect(stored.Spec.NodeName).To(Equal("n1"), "the stored object is unchanged")
			g.Expect(stored.Spec.Source).To(Equal(v1alpha1.SourceAPI), "the stored object is unchanged")
		})
	}
}

// TestDefaults sends objects with nothing optional set, as a person's YAML
// would, and reads back what the API server stored.
func TestDefaults(t *testing.T) {
	cases := map[string]struct {
		// obj is the object sent, with only its required fields.
		obj *unstructured.Unstructured
		// want maps a field path in the stored object to its defaulted value.
		want map[string]any
	}{
		"NodeMaintenance": {
			obj: object("NodeMaintenance", "defaults-nm", map[string]any{"nodeName": "n1", "reason": "r"}),
			want: map[string]any{
				"spec.type":          "Reboot",
				"spec.source":        "api",
				"spec.ignoreWindows": nil,
			},
		},
		"MaintenancePool": {
			obj: object("MaintenancePool", "defaults-pool", map[string]any{"nodeSelector": selector()}),
			want: map[string]any{
				"spec.maxUnavailable": int64(1),
				"spec.drain.timeout":  "10m",
			},
		},
		"MaintenancePool window": {
			obj: object("MaintenancePool", "defaults-pool-window", map[string]any{"nodeSelector": selector(), "windows": []any{
				map[string]any{"schedule": "0 2 * * *", "duration": "4h"},
			}}),
			want: map[string]any{"spec.windows.0.timeZone": "UTC"},
		},
		"RebootPolicy": {
			obj: object("RebootPolicy", "defaults-policy", map[string]any{"prometheus": map[string]any{"query": "q", "threshold": "1"}}),
			want: map[string]any{
				"spec.cooldown":               "24h",
				"spec.maxConcurrentRequests":  int64(1),
				"spec.prometheus.comparison":  ">",
				"spec.prometheus.for":         "0s",
				"spec.prometheus.nodeLabel":   "node",
				"spec.prometheus.matchNodeBy": "Name",
				"spec.prometheus.interval":    "30s",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			g.Expect(bed.Client.Create(ctx, tc.obj)).To(Succeed())
			t.Cleanup(func() { _ = bed.Client.Delete(context.Background(), tc.obj) })

			stored := &unstructured.Unstructured{}
			stored.SetGroupVersionKind(tc.obj.GroupVersionKind())
			g.Expect(bed.Client.Get(ctx, types.NamespacedName{Name: tc.obj.GetName()}, stored)).To(Succeed())
			for path, want := range tc.want {
				got, found := field(stored.Object, path)
				if want == nil {
					g.Expect(found).To(BeFalse(), "%s is not set", path)
					continue
				}
				g.Expect(found).To(BeTrue(), "%s is set", path)
				g.Expect(got).To(Equal(want), path)
			}
		})
	}
}

// TestDefaultsTyped checks the defaults through the Go types the operator
// reads them with.
func TestDefaultsTyped(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()

	nm := &v1alpha1.NodeMaintenance{
		ObjectMeta: metav1.ObjectMeta{Name: "defaults-typed-nm"},
		Spec:       v1alpha1.NodeMaintenanceSpec{NodeName: "n1", Reason: "r"},
	}
	g.Expect(bed.Client.Create(ctx, nm)).To(Succeed())
	t.Cleanup(func() { _ = bed.Client.Delete(context.Background(), nm) })
	g.Expect(nm.Spec.Type).To(Equal(v1alpha1.RebootMaintenance))
	g.Expect(nm.Spec.Source).To(Equal(v1alpha1.SourceAPI))

	pool := &v1alpha1.MaintenancePool{
		ObjectMeta: metav1.ObjectMeta{Name: "defaults-typed-pool"},
		Spec:       v1alpha1.MaintenancePoolSpec{NodeSelector: &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.SelectorValue{"pool": "x"}}},
	}
	g.Expect(bed.Client.Create(ctx, pool)).To(Succeed())
	t.Cleanup(func() { _ = bed.Client.Delete(context.Background(), pool) })
	g.Expect(pool.Spec.MaxUnavailable).NotTo(BeNil())
	g.Expect(pool.Spec.MaxUnavailable.IntValue()).To(Equal(1))
	g.Expect(pool.Spec.Drain.Timeout).NotTo(BeNil())
	g.Expect(pool.Spec.Drain.Timeout.Duration.String()).To(Equal("10m0s"))

	policy := &v1alpha1.RebootPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "defaults-typed-policy"},
		Spec:       v1alpha1.RebootPolicySpec{Schedule: &v1alpha1.ScheduleTrigger{Cron: "0 3 1 * *"}},
	}
	g.Expect(bed.Client.Create(ctx, policy)).To(Succeed())
	t.Cleanup(func() { _ = bed.Client.Delete(context.Background(), policy) })
	g.Expect(policy.Spec.Cooldown).NotTo(BeNil())
	g.Expect(policy.Spec.Cooldown.Duration.String()).To(Equal("24h0m0s"))
	g.Expect(policy.Spec.Schedule.TimeZone).To(Equal("UTC"))
}

// field reads a dotted path from an unstructured object; a numeric element
// indexes a list.
func field(obj map[string]any, path string) (any, bool) {
	var cur any = obj
	for _, part := range strings.Split(path, ".") {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[part]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			var i int
			if _, err := fmt.Sscan(part, &i); err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// TestCRDPrinting reads the installed CRDs back from the API server and
// checks what `kubectl get` shows and the short names it accepts.
func TestCRDPrinting(t *testing.T) {
	s := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(bed.Config, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		// wantColumns are the default (priority 0) printer columns, in order.
		wantColumns []string
		// wantShortNames are the CRD's short names.
		wantShortNames []string
		// wantCategories must all be among the CRD's categories.
		wantCategories []string
	}{
		"maintenancepools.kmaint.io": {
			wantColumns:    []string{"Nodes", "Ready", "Updated", "Unavailable", "Paused", "Halted", "Age"},
			wantShortNames: []string{"mp", "mpool"},
			wantCategories: []string{"kmaint"},
		},
		"rebootpolicies.kmaint.io": {
			wantColumns:    []string{"DryRun", "Suspended", "Raised", "Ready", "Age"},
			wantShortNames: []string{"rp"},
			wantCategories: []string{"kmaint"},
		},
		"nodemaintenances.kmaint.io": {
			wantColumns: []string{"Node", "Type", "Source", "Phase", "Age"},
			// Not nm: medik8s's NodeMaintenance has it (README.md here).
			wantShortNames: []string{"kmnm"},
			wantCategories: []string{"kmaint"},
		},
		"maintenancegates.kmaint.io": {
			wantColumns:    []string{"Paused", "Reason", "Age"},
			wantShortNames: []string{"mgate"},
			wantCategories: []string{"kmaint"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			crd := &apiextensionsv1.CustomResourceDefinition{}
			g.Expect(c.Get(context.Background(), types.NamespacedName{Name: name}, crd)).To(Succeed())
			g.Expect(crd.Spec.Scope).To(Equal(apiextensionsv1.ClusterScoped))
			g.Expect(crd.Spec.Names.ShortNames).To(ConsistOf(tc.wantShortNames))
			g.Expect(crd.Spec.Names.Categories).To(ContainElements(tc.wantCategories))
			var version *apiextensionsv1.CustomResourceDefinitionVersion
			for i := range crd.Spec.Versions {
				if crd.Spec.Versions[i].Name == v1alpha1.GroupVersion.Version {
					version = &crd.Spec.Versions[i]
				}
			}
			g.Expect(version).NotTo(BeNil(), "version %s is served", v1alpha1.GroupVersion.Version)
			g.Expect(version.Subresources).NotTo(BeNil())
			g.Expect(version.Subresources.Status).NotTo(BeNil(), "status is a subresource")
			var columns []string
			for _, col := range version.AdditionalPrinterColumns {
				if col.Priority == 0 {
					columns = append(columns, col.Name)
				}
			}
			g.Expect(columns).To(Equal(tc.wantColumns))
		})
	}
}

func TestBlockingPodSelectorAdmission(t *testing.T) {
	const emptyMsg = "blockingPodSelector must have at least one matchLabels entry or matchExpressions requirement"
	withPods := func(sel map[string]any) map[string]any {
		return map[string]any{"nodeSelector": selector(), "blockingPodSelector": sel}
	}
	runAdmissionCases(t, "MaintenancePool", map[string]admissionCase{
		"matchLabels":        {spec: withPods(map[string]any{"matchLabels": map[string]any{"app": "batch-job"}})},
		"matchExpressions":   {spec: withPods(map[string]any{"matchExpressions": []any{map[string]any{"key": "app", "operator": "Exists"}}})},
		"empty selector":     {spec: withPods(map[string]any{}), wantErr: emptyMsg, wantField: "spec.blockingPodSelector"},
		"empty lists":        {spec: withPods(map[string]any{"matchLabels": map[string]any{}, "matchExpressions": []any{}}), wantErr: emptyMsg, wantField: "spec.blockingPodSelector"},
		"bad label key":      {spec: withPods(map[string]any{"matchLabels": map[string]any{"-bad": "x"}}), wantErr: "every key must be a label key", wantField: "spec.blockingPodSelector.matchLabels"},
		"In without values":  {spec: withPods(map[string]any{"matchExpressions": []any{map[string]any{"key": "app", "operator": "In"}}}), wantErr: "values must list at least one value"},
		"operator lowercase": {spec: withPods(map[string]any{"matchExpressions": []any{map[string]any{"key": "app", "operator": "exists"}}}), wantErr: "Unsupported value"},
	})
}

func TestMaintenanceGateAdmission(t *testing.T) {
	const nameMsg = "the MaintenanceGate must be named cluster"
	runAdmissionCases(t, "MaintenanceGate", map[string]admissionCase{
		"another name":           {name: "stop-everything", spec: map[string]any{"paused": true, "reason": "freeze"}, wantErr: nameMsg},
		"reason past 1024 bytes": {name: v1alpha1.ClusterGateName, spec: map[string]any{"paused": true, "reason": strings.Repeat("x", 1025)}, wantErr: "Too long", wantField: "spec.reason"},
		"paused not a boolean":   {name: v1alpha1.ClusterGateName, spec: map[string]any{"paused": "yes"}, wantErr: "spec.paused", wantField: "spec.paused"},
		"named cluster":          {name: v1alpha1.ClusterGateName, spec: map[string]any{"paused": false, "reason": "not now"}},
	})
}
