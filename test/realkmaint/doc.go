// Package realkmaint runs kmaint as a user installs it, on the real cluster
// of test/realcluster: kmaint's image built from the Dockerfile
// (hack/image-tar.sh) imported into each node's containerd, and the chart
// (config/helm/kmaint) installed with helm, with only the test bed's values
// (config/helm/kmaint/ci/realcluster-values.yaml). The operator's
// Deployment, the daemon's DaemonSet with its host mounts and security
// context, the admission policies and the RBAC are the shipped ones.
package realkmaint
