// Package helm tests kmaint's Helm chart, config/helm/kmaint, rendered by
// the helm that hack/helm-assets.sh builds: with its default values it
// renders the objects config/default renders (object by object, every
// difference listed with its reason); its values change what they say;
// every object it can render is accepted by a real API server (server-side
// dry run, with kmaint's and the Prometheus Operator's CRDs installed); it
// installs, upgrades and uninstalls for real; and its copies of the CRDs,
// the dashboards and the PrometheusRule equal the repository's.
package helm
