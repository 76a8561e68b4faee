// Package realcluster starts a real Kubernetes cluster on this machine for
// tests: etcd, kube-apiserver, kube-controller-manager and kube-scheduler in
// a network namespace of their own, and worker nodes that are
// systemd-nspawn machines booting Debian 12 with systemd as PID 1, each
// running containerd and a real kubelet as systemd units. A node reboots as
// a machine does: logind's Reboot (or systemctl reboot) inside it ends its
// nspawn with exit status 133, and the node boots again with a new boot ID
// and its persistent journal.
//
// Nothing of the host changes and nothing is left behind: every process of
// the cluster runs in cgroups of its own (in every hierarchy) and is killed
// through them; the network namespace, the bridge, the veths and every
// mount (the nodes' overlays, their bind mounts) live in a namespace held
// by the cluster's processes and vanish with them. A run that was killed is
// cleaned up by the next Start of a cluster of the same name, or by
// Cleanup. The kernel settings kubelet insists on are shown to it inside
// each node by bind mounts; the host's are untouched.
//
// It needs root, systemd-nspawn, and what hack/envtest-assets.sh,
// hack/cluster-assets.sh and hack/node-rootfs.sh build into bin/ (make
// test builds them).
//
// A test uses it like this:
//
//	c, err := realcluster.Start(ctx, realcluster.Config{Name: "mytest", Nodes: 3})
//	...
//	defer c.Stop(ctx)
//	kubectl --kubeconfig c.Kubeconfig() ...        (from the host, through a loopback proxy)
//	c.Nodes()[0].Exec(ctx, "systemctl", "reboot")  (inside the node, as root)
//
// Give each test package its own Name: a Start cleans up what a cluster
// of its name left, running or not.
//
// What a node offers a test (hack/node-rootfs.sh and hack/node-rootfs/):
// an ordinary user kmaint-user (uid 1000) beside root; logind, which lets
// only root reboot; the node's boot ID as a plain file at
// /run/kmaint-node/boot_id (inside a container /proc shows the host
// kernel's boot ID, and nspawn's own file cannot be a hostPath); images
// imported from the cluster assets' images/ at every boot, more with
// Node.ImportImage (kept across reboots); Config.NodeBinds for binaries
// from the host; Node.HoldNextBoot to keep a node down after its next
// reboot, as a machine that does not come back, until the test releases it. No kube-proxy and no cluster DNS run: the kubernetes
// Service's cluster IP reaches the API server, other cluster IPs reach
// nothing, pod IPs are routed between nodes. Cluster.Expose makes an
// address of the host (a test's Prometheus, say) reachable from pods at an
// address of the control plane's.
package realcluster
