package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of kmaint's API objects.
	GroupVersion = schema.GroupVersion{Group: "kmaint.io", Version: "v1alpha1"}

	// SchemeBuilder registers kmaint's types with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds kmaint's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
