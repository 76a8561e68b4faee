package realcluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// holderScript sets up the cluster's namespaces and then holds them open.
// The network namespace gets a bridge the control plane owns and every
// node plugs into, the kubernetes Service's cluster IP as a local address
// (so in-cluster clients reach the API server without kube-proxy), and
// forwarding between the nodes' pod networks. The mount namespace gets a
// /run of its own, where systemd-nspawn keeps its locks and per-machine
// directories, which would otherwise be left in the host's /run. Every
// mount and link of the cluster lives in these namespaces and goes when
// the last of its processes does.
const holderScript = `set -e
mount -t tmpfs -o mode=0755 tmpfs /run
ip link set lo up
ip addr add "$SERVICE_IP/32" dev lo
ip link add "$BRIDGE" type bridge
ip addr add "$GATEWAY/$PREFIX" dev "$BRIDGE"
ip link set "$BRIDGE" up
echo 1 >/proc/sys/net/ipv4/ip_forward
echo ready
exec sleep infinity
`

// namespaces is the holder of the cluster's network and mount namespaces.
type namespaces struct {
	pid int
	cmd *exec.Cmd
}

// startNamespaces starts the holder in cg, with the cluster's addresses.
func startNamespaces(cg *cgroupSet, net network, log io.Writer) (*namespaces, error) {
	argv := cg.wrap("unshare", "--net", "--mount", "--propagation", "private", "--", "/bin/sh", "-c", holderScript)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(),
		"SERVICE_IP="+net.serviceIP, "BRIDGE="+net.bridge, "GATEWAY="+net.gateway, "PREFIX="+strconv.Itoa(net.prefix))
	cmd.Stderr = log
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the cluster's namespaces: %w", err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	// Wait only after the read: it closes the pipe.
	go func() { _ = cmd.Wait() }()
	if err != nil || strings.TrimSpace(line) != "ready" {
		return nil, fmt.Errorf("set up the cluster's network namespace: %q %v (see its log)", line, err)
	}
	// unshare execs sh, which execs sleep: the pid is the holder's.
	return &namespaces{pid: cmd.Process.Pid, cmd: cmd}, nil
}

// enter returns argv run inside the namespaces (net and mount).
func (n *namespaces) enter(argv ...string) []string {
	return append([]string{"nsenter", "--target", strconv.Itoa(n.pid), "--net", "--mount", "--"}, argv...)
}

// netnsPath is the holder's network namespace as a file.
func (n *namespaces) netnsPath() string { return fmt.Sprintf("/proc/%d/ns/net", n.pid) }

// netnsInode identifies the network namespace, to check it is gone.
func (n *namespaces) netnsInode() (uint64, error) {
	var st unix.Stat_t
	if err := unix.Stat(n.netnsPath(), &st); err != nil {
		return 0, err
	}
	return st.Ino, nil
}

// dialer connects from, and listens in, the cluster's network namespace: the
// socket is made on a thread that has entered it, and a socket stays in the
// namespace it was made in.
type dialer struct {
	ns *os.File
}

func newDialer(ns *namespaces) (*dialer, error) {
	f, err := os.Open(ns.netnsPath())
	if err != nil {
		return nil, fmt.Errorf("open the cluster's network namespace: %w", err)
	}
	return &dialer{ns: f}, nil
}

func (d *dialer) close() { _ = d.ns.Close() }

// inside runs fn on a thread of its own that has entered the namespace.
// Only the sockets fn makes belong there; the goroutine calling inside, and
// every other, stays in the host's.
func (d *dialer) inside(fn func()) error {
	entered := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		own, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			entered <- err
			return
		}
		defer own.Close()
		if err := unix.Setns(int(d.ns.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			entered <- fmt.Errorf("enter the cluster's network namespace: %w", err)
			return
		}
		fn()
		// A thread that cannot go back stays locked, and Go ends it with
		// this goroutine.
		if unix.Setns(int(own.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		entered <- nil
	}()
	return <-entered
}

// DialContext dials addr from inside the namespace.
func (d *dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	var (
		c       net.Conn
		dialErr error
	)
	if err := d.inside(func() {
		var nd net.Dialer
		c, dialErr = nd.DialContext(ctx, network, addr)
	}); err != nil {
		return nil, err
	}
	return c, dialErr
}

// listen listens on addr inside the namespace.
func (d *dialer) listen(addr string) (net.Listener, error) {
	var (
		ln        net.Listener
		listenErr error
	)
	if err := d.inside(func() { ln, listenErr = net.Listen("tcp", addr) }); err != nil {
		return nil, err
	}
	return ln, listenErr
}

// proxy forwards each connection a listener accepts to a target it dials,
// each side in its own network namespace: from the host's loopback to the
// API server inside the cluster's namespace (startProxy), or from inside
// the cluster's namespace to an address of the host (Cluster.Expose), with
// no link between the namespaces.
type proxy struct {
	ln   net.Listener
	dial func(ctx context.Context) (net.Conn, error)
	// ctx ends at close, which ends every connection still forwarded: a
	// socket left open in the cluster's namespace would keep it alive.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // serve and every forward
}

// startProxy lets clients on the host (kubectl, helm, the tests) reach
// target inside the cluster's namespace at a port of the host's loopback.
func startProxy(d *dialer, target string) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	return serveProxy(ln, func(ctx context.Context) (net.Conn, error) {
		return d.DialContext(ctx, "tcp", target)
	}), nil
}

func serveProxy(ln net.Listener, dial func(ctx context.Context) (net.Conn, error)) *proxy {
	ctx, cancel := context.WithCancel(context.Background())
	p := &proxy{ln: ln, dial: dial, ctx: ctx, cancel: cancel}
	p.wg.Add(1)
	go p.serve()
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go p.forward(c)
	}
}

func (p *proxy) forward(c net.Conn) {
	defer p.wg.Done()
	defer c.Close()
	u, err := p.dial(p.ctx)
	if err != nil {
		return
	}
	defer u.Close()
	// Each direction ends on its own, as TCP's do: a client that has sent
	// all it had (nc's stdin at its end) still reads the answer.
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(u, c)
	go pipe(c, u)
	for range 2 {
		select {
		case <-done:
		case <-p.ctx.Done():
			return
		}
	}
}

// close stops accepting, ends the connections still forwarded, and waits
// until every forward has returned.
func (p *proxy) close() error {
	p.cancel()
	err := p.ln.Close()
	p.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
