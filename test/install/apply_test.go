package install

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/test/manifests"
)

// apply server-side applies the object as make deploy would.
func apply(ctx context.Context, u *unstructured.Unstructured, opts ...client.ApplyOption) error {
	return manifests.Apply(ctx, bed.Client, "kmaint-install-test", u, opts...)
}
