// Package realkmaint runs kmaint as a user installs it, on the real cluster
// of test/realcluster: kmaint's image built from the Dockerfile
// (hack/image-tar.sh) imported into each node's containerd, and the chart
// (config/helm/kmaint) installed with helm, with only the test bed's values
// (config/helm/kmaint/ci/realcluster-values.yaml). The operator's
// Deployment, the daemon's DaemonSet with its host mounts and security
// context, the admission policies and the RBAC are the shipped ones.
//
// RebootPolicies with a Prometheus trigger ask a real Prometheus
// (test/promtest) that runs on the host and scrapes series the test sets;
// the operator's pods reach it at the address Cluster.Expose gives, which
// the install passes as prometheus.url, as any cluster with such policies
// sets it.
package realkmaint
