// Package install tests kmaint's installation, config/ as `make deploy`
// applies it, against a real API server: every object config/default
// renders is accepted (server-side dry run, kmaint's CRDs installed), the
// rendered objects and names are the ones other installers (the Helm chart)
// compare with, the pods are locked down as their comments say, and the
// daemon's identity can change only its own node: its RBAC and the
// ValidatingAdmissionPolicy of config/admission, exercised for real with a
// token bound to a Pod on one node.
package install
