package realcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/util/wait"
)

// machineLock is held by every running cluster of this machine, so that
// they run one at a time. Clusters cannot share the machine's kernel
// limits: the inotify instances of all root processes (fs.inotify.
// max_user_instances, 128 on Debian) are shared by every node's systemd,
// kubelet and containerd, a cluster of three nodes takes about 55, and a
// node whose containerd finds none left starts without its CRI plugin and
// never gets Ready. Raising the limit would change the host. The lock is an
// flock, so it goes with its holder however that ends; the empty file stays,
// as lock files do (removing it while another waits on it would let a third
// lock a new file beside them).
const machineLock = stateRoot + ".lock"

// lockMachine waits until no other cluster runs on this machine, or ctx
// ends, and returns the lock to hold until the cluster is stopped.
func lockMachine(ctx context.Context, cfg Config) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(machineLock), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(machineLock, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open the machine's cluster lock: %w", err)
	}
	logged := false
	err = wait.PollUntilContextCancel(ctx, time.Second, true, func(context.Context) (bool, error) {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == unix.EWOULDBLOCK {
			if !logged {
				cfg.Log.Info("Waiting for another real cluster on this machine to stop: they run one at a time", "cluster", cfg.Name, "lock", machineLock)
				logged = true
			}
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("wait for the machine's cluster lock %s: %w", machineLock, err)
	}
	return f, nil
}
