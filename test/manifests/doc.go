// Package manifests renders and applies kmaint's install manifests in tests:
// the kustomize trees under config/ through the kubectl built with the API
// server, decoded into unstructured objects, applied server-side as make
// deploy applies them.
package manifests
