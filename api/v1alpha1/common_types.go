package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// MaintenanceWindow is a recurring span of time in which reboots may start:
// it opens when Schedule fires and stays open for Duration.
type MaintenanceWindow struct {
	// Schedule is a standard five-field cron expression for the window's
	// start, e.g. "0 2 * * 1-5" for 02:00 on weekdays.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Schedule string `json:"schedule"`

	// Duration is how long the window stays open once it starts, e.g. "4h".
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="duration must be a positive Go duration such as 90m or 4h"
	Duration metav1.Duration `json:"duration"`

	// TimeZone is the IANA time zone the schedule is read in, e.g.
	// "Europe/Berlin". Windows follow the zone's daylight-saving changes.
	// +kubebuilder:default=UTC
	// +kubebuilder:validation:MaxLength=64
	// +optional
	TimeZone string `json:"timeZone,omitempty"`
}
