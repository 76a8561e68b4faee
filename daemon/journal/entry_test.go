package journal

import (
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

const (
	// testBoot is a boot ID as the kernel writes it; journald stores it as
	// 32 hex digits without dashes.
	testBoot = "6f1c2a4e-9b3d-4c5e-8a7f-0123456789ab"
)

var testTime = time.Date(2025, 3, 1, 12, 30, 15, 123456000, time.UTC)

// testReceived is when journald received the entries: a moment after
// their writers dated them.
var testReceived = testTime.Add(3 * time.Millisecond)

// stored renders e the way journald would hand it back: the fields the
// writer sent, plus MESSAGE and the trusted fields journald adds itself.
func stored(e Entry, uid string) map[string]string {
	msg, vars := e.fields()
	f := maps.Clone(vars)
	f["MESSAGE"] = msg
	f["_BOOT_ID"] = strings.ReplaceAll(testBoot, "-", "")
	f["_UID"] = uid
	f["__REALTIME_TIMESTAMP"] = strconv.FormatInt(testReceived.UnixMicro(), 10)
	return f
}

func TestEntryRoundTripsThroughJournalFields(t *testing.T) {
	tests := map[string]struct {
		entry Entry
		uid   string
		// want is what parse reads back: the entry plus the boot and uid
		// journald recorded.
		want Entry
		// wantMessageID is the MESSAGE_ID the entry is written with.
		wantMessageID string
	}{
		"api request": {
			entry:         Entry{Kind: KindRequest, ID: "0d6f5b1e-uid", Source: v1alpha1.SourceAPI, Reason: "kernel 6.12", Time: testTime},
			uid:           "0",
			want:          Entry{Kind: KindRequest, ID: "0d6f5b1e-uid", Source: v1alpha1.SourceAPI, Reason: "kernel 6.12", Time: testTime, BootID: testBoot, UID: 0},
			wantMessageID: RequestMessageID,
		},
		"config request keeps its config": {
			entry:         Entry{Kind: KindRequest, ID: "config-0011223344556677", Source: v1alpha1.SourceConfig, Reason: "config v1, pool wants v2", Config: "v2", Time: testTime},
			uid:           "0",
			want:          Entry{Kind: KindRequest, ID: "config-0011223344556677", Source: v1alpha1.SourceConfig, Reason: "config v1, pool wants v2", Config: "v2", Time: testTime, BootID: testBoot},
			wantMessageID: RequestMessageID,
		},
		"sentinel request keeps its fingerprint": {
			entry:         Entry{Kind: KindRequest, ID: "sentinel-0011223344556677", Source: v1alpha1.SourceSentinel, Reason: "packages libc6", Sentinel: strings.Repeat("ab", 32), Time: testTime},
			uid:           "0",
			want:          Entry{Kind: KindRequest, ID: "sentinel-0011223344556677", Source: v1alpha1.SourceSentinel, Reason: "packages libc6", Sentinel: strings.Repeat("ab", 32), Time: testTime, BootID: testBoot},
			wantMessageID: RequestMessageID,
		},
		"request written by another user keeps its uid (Follow drops it)": {
			entry:         Entry{Kind: KindRequest, ID: "h1", Source: v1alpha1.SourceHost, Reason: "mine", Time: testTime},
			uid:           "1000",
			want:          Entry{Kind: KindRequest, ID: "h1", Source: v1alpha1.SourceHost, Reason: "mine", Time: testTime, BootID: testBoot, UID: 1000},
			wantMessageID: RequestMessageID,
		},
		"cancellation keeps the request it withdraws and why": {
			entry:         Entry{Kind: KindCancel, ID: "h1", Reason: "cancelled on the node", Time: testTime},
			uid:           "0",
			want:          Entry{Kind: KindCancel, ID: "h1", Reason: "cancelled on the node", Time: testTime, BootID: testBoot},
			wantMessageID: CancelMessageID,
		},
		"rebooting entry keeps its requests in order": {
			entry:         Entry{Kind: KindRebooting, Requests: []string{"a", "b", "config-1"}, Time: testTime},
			uid:           "0",
			want:          Entry{Kind: KindRebooting, Requests: []string{"a", "b", "config-1"}, Time: testTime, BootID: testBoot},
			wantMessageID: RebootingMessageID,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			f := stored(tt.entry, tt.uid)
			g.Expect(f).To(HaveKeyWithValue("MESSAGE_ID", tt.wantMessageID))
			got, err := parse(f)
			g.Expect(err).NotTo(HaveOccurred())
			// KMAINT_TIME, not the journal's receive time, and to the
			// microsecond.
			g.Expect(got.Time).To(BeTemporally("==", tt.want.Time))
			g.Expect(got.Received).To(BeTemporally("==", testReceived))
			got.Time, tt.want.Time, got.Received = time.Time{}, time.Time{}, time.Time{}
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

// A writer dates its entry (KMAINT_TIME), and the time orders the pool's
// queue; journald's receive time bounds it, so that a writer cannot jump
// the queue (KMAINT_TIME=0) or date a request in the future.
func TestParseBoundsTheWritersTimeByTheReceiveTime(t *testing.T) {
	tests := map[string]struct {
		// kmaintTime is KMAINT_TIME; "-" leaves it out.
		kmaintTime string
		// want is the entry's time.
		want time.Time
	}{
		"a moment before receipt: the writer's":        {kmaintTime: micros(testReceived.Add(-time.Second)), want: testReceived.Add(-time.Second)},
		"exactly at receipt: the writer's":             {kmaintTime: micros(testReceived), want: testReceived},
		"MaxWriterLag before receipt: the writer's":    {kmaintTime: micros(testReceived.Add(-MaxWriterLag)), want: testReceived.Add(-MaxWriterLag)},
		"just over MaxWriterLag before: the receipt's": {kmaintTime: micros(testReceived.Add(-MaxWriterLag - time.Microsecond)), want: testReceived},
		"0 (1970, first in the queue): the receipt's":  {kmaintTime: "0", want: testReceived},
		"negative: the receipt's":                      {kmaintTime: "-5", want: testReceived},
		"after receipt: the receipt's":                 {kmaintTime: micros(testReceived.Add(time.Microsecond)), want: testReceived},
		"in the year 9999: the receipt's":              {kmaintTime: micros(time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)), want: testReceived},
		"not a number: the receipt's":                  {kmaintTime: "yesterday", want: testReceived},
		"overflowing int64: the receipt's":             {kmaintTime: "99999999999999999999", want: testReceived},
		"missing: the receipt's":                       {kmaintTime: "-", want: testReceived},
		"empty: the receipt's":                         {kmaintTime: "", want: testReceived},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			f := stored(Entry{Kind: KindRequest, ID: "h1", Source: v1alpha1.SourceHost, Reason: "r", Time: testTime}, "0")
			if tt.kmaintTime == "-" {
				delete(f, fieldTime)
			} else {
				f[fieldTime] = tt.kmaintTime
			}
			got, err := parse(f)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.Time).To(BeTemporally("==", tt.want))
		})
	}
}

func micros(t time.Time) string { return strconv.FormatInt(t.UnixMicro(), 10) }

func TestParseRejectsMalformedEntries(t *testing.T) {
	request := Entry{Kind: KindRequest, ID: "h1", Source: v1alpha1.SourceHost, Reason: "kernel", Time: testTime}
	rebooting := Entry{Kind: KindRebooting, Requests: []string{"h1"}, Time: testTime}
	cancel := Entry{Kind: KindCancel, ID: "h1", Reason: "cancelled on the node", Time: testTime}
	sentinelRequest := Entry{Kind: KindRequest, ID: "s1", Source: v1alpha1.SourceSentinel, Reason: "packages libc6", Sentinel: "fp", Time: testTime}
	tests := map[string]struct {
		entry Entry
		// change spoils the stored fields.
		change func(f map[string]string)
		// wantErr is a substring of the error; empty means the entry is
		// accepted (the limits themselves are allowed).
		wantErr string
	}{
		"missing _UID":                         {entry: request, change: func(f map[string]string) { delete(f, "_UID") }, wantErr: "_UID"},
		"non-numeric _UID":                     {entry: request, change: func(f map[string]string) { f["_UID"] = "root" }, wantErr: "_UID"},
		"missing MESSAGE_ID":                   {entry: request, change: func(f map[string]string) { delete(f, "MESSAGE_ID") }, wantErr: "not a kmaint entry"},
		"unknown MESSAGE_ID":                   {entry: request, change: func(f map[string]string) { f["MESSAGE_ID"] = "00000000000000000000000000000000" }, wantErr: "not a kmaint entry"},
		"request without request id":           {entry: request, change: func(f map[string]string) { delete(f, fieldRequestID) }, wantErr: fieldRequestID},
		"request with an empty id":             {entry: request, change: func(f map[string]string) { f[fieldRequestID] = "" }, wantErr: fieldRequestID},
		"request id of 129 bytes":              {entry: request, change: func(f map[string]string) { f[fieldRequestID] = strings.Repeat("x", 129) }, wantErr: fieldRequestID},
		"request id of 128 bytes":              {entry: request, change: func(f map[string]string) { f[fieldRequestID] = strings.Repeat("x", 128) }},
		"unknown source":                       {entry: request, change: func(f map[string]string) { f[fieldSource] = "cron" }, wantErr: `unknown source "cron"`},
		"missing source":                       {entry: request, change: func(f map[string]string) { delete(f, fieldSource) }, wantErr: "unknown source"},
		"empty reason":                         {entry: request, change: func(f map[string]string) { f[fieldReason] = "" }, wantErr: "reason"},
		"missing reason":                       {entry: request, change: func(f map[string]string) { delete(f, fieldReason) }, wantErr: "reason"},
		"reason of 513 bytes":                  {entry: request, change: func(f map[string]string) { f[fieldReason] = strings.Repeat("r", v1alpha1.MaxReasonLength+1) }, wantErr: "reason"},
		"reason of 512 bytes":                  {entry: request, change: func(f map[string]string) { f[fieldReason] = strings.Repeat("r", v1alpha1.MaxReasonLength) }},
		"request without _BOOT_ID":             {entry: request, change: func(f map[string]string) { delete(f, "_BOOT_ID") }, wantErr: "_BOOT_ID"},
		"rebooting entry without _BOOT_ID":     {entry: rebooting, change: func(f map[string]string) { delete(f, "_BOOT_ID") }, wantErr: "_BOOT_ID"},
		"rebooting entry without _UID":         {entry: rebooting, change: func(f map[string]string) { delete(f, "_UID") }, wantErr: "_UID"},
		"cancellation without request id":      {entry: cancel, change: func(f map[string]string) { delete(f, fieldRequestID) }, wantErr: fieldRequestID},
		"cancellation id of 129 bytes":         {entry: cancel, change: func(f map[string]string) { f[fieldRequestID] = strings.Repeat("x", 129) }, wantErr: fieldRequestID},
		"cancellation without reason":          {entry: cancel, change: func(f map[string]string) { delete(f, fieldReason) }, wantErr: "reason"},
		"cancellation reason of 513 bytes":     {entry: cancel, change: func(f map[string]string) { f[fieldReason] = strings.Repeat("r", v1alpha1.MaxReasonLength+1) }, wantErr: "reason"},
		"cancellation without _BOOT_ID":        {entry: cancel, change: func(f map[string]string) { delete(f, "_BOOT_ID") }, wantErr: "_BOOT_ID"},
		"sentinel request without fingerprint": {entry: sentinelRequest, change: func(f map[string]string) { delete(f, fieldSentinel) }, wantErr: fieldSentinel},
		"sentinel fingerprint of 129 bytes": {
			entry: sentinelRequest, change: func(f map[string]string) { f[fieldSentinel] = strings.Repeat("f", 129) }, wantErr: fieldSentinel,
		},
		"sentinel fingerprint of 128 bytes": {entry: sentinelRequest, change: func(f map[string]string) { f[fieldSentinel] = strings.Repeat("f", 128) }},
		"a fingerprint on a host request":   {entry: request, change: func(f map[string]string) { f[fieldSentinel] = "fp" }, wantErr: fieldSentinel},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			f := stored(tt.entry, "0")
			tt.change(f)
			_, err := parse(f)
			if tt.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
		})
	}
}

func TestFormatBootID(t *testing.T) {
	tests := map[string]struct {
		in string
		// want is the kernel's form: 8-4-4-4-12 lowercase hex digits.
		want string
	}{
		"journal form, lowercase":            {in: "6f1c2a4e9b3d4c5e8a7f0123456789ab", want: testBoot},
		"journal form, uppercase":            {in: "6F1C2A4E9B3D4C5E8A7F0123456789AB", want: testBoot},
		"kernel form":                        {in: testBoot, want: testBoot},
		"kernel form, mixed case":            {in: "6F1c2A4e-9B3d-4C5e-8A7f-0123456789Ab", want: testBoot},
		"as read from /proc, with a newline": {in: testBoot + "\n", want: testBoot},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(FormatBootID(tt.in)).To(Equal(tt.want))
		})
	}
}
