package realcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
)

// Expose makes an address of the host reachable from inside the cluster:
// from pods, nodes and the control plane, none of which can reach the
// host's network otherwise (a test's Prometheus or webhook on the host's
// loopback, say). It listens on a free port of the control plane's address
// on the cluster's bridge, which every node and pod routes to (it is where
// they reach the API server), and forwards each connection to hostAddr,
// dialed from the host. It returns the address to use inside the cluster,
// e.g. 10.77.0.1:40123. The listener is closed by Stop.
func (c *Cluster) Expose(hostAddr string) (inClusterAddr string, err error) {
	if _, _, err := net.SplitHostPort(hostAddr); err != nil {
		return "", fmt.Errorf("expose %q: %w", hostAddr, err)
	}
	c.exposedMu.Lock()
	defer c.exposedMu.Unlock()
	if c.stopped {
		return "", errors.New("expose: the cluster is stopped")
	}
	// The socket lives in the cluster's namespace, the process's threads
	// stay in the host's: Accept and the dial to hostAddr need nothing more.
	ln, err := c.dial.listen(net.JoinHostPort(c.net.gateway, "0"))
	if err != nil {
		return "", fmt.Errorf("expose %s: listen inside the cluster: %w", hostAddr, err)
	}
	p := serveProxy(ln, func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", hostAddr)
	})
	c.exposed = append(c.exposed, p)
	return p.addr(), nil
}

// closeExposed closes every listener Expose opened; a socket held open
// would keep the cluster's network namespace alive after its processes.
func (c *Cluster) closeExposed() error {
	c.exposedMu.Lock()
	defer c.exposedMu.Unlock()
	c.stopped = true
	var errs []error
	for _, p := range c.exposed {
		errs = append(errs, p.close())
	}
	c.exposed = nil
	return errors.Join(errs...)
}
