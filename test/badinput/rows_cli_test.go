package badinput

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	plugin "github.com/kmaint/kmaint/cmd/kubectl-kmaint/cmd"
	"github.com/kmaint/kmaint/daemon/cli"
	"github.com/kmaint/kmaint/operator"
)

const (
	pluginSurface   = "kubectl kmaint"
	daemonSurface   = "kmaint-daemon"
	operatorSurface = "kmaint-operator options"
)

// kubectlKmaint runs the plugin as a person would and returns its error.
func kubectlKmaint(e *env, args ...string) error {
	var stdout, stderr bytes.Buffer
	root := plugin.NewCommand(genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &stdout, ErrOut: &stderr})
	root.SetArgs(append([]string{"--kubeconfig", e.kubeconfig}, args...))
	root.SilenceUsage = true
	if err := root.ExecuteContext(context.Background()); err != nil {
		return fmt.Errorf("%w (stderr: %s)", err, stderr.String())
	}
	return nil
}

// kmaintDaemon runs the daemon's command line; a non-zero exit is an error
// with what it printed.
func kmaintDaemon(args ...string) error {
	var stdout, stderr bytes.Buffer
	if code := cli.Main(context.Background(), args, &stdout, &stderr, cli.Hooks{}); code != 0 {
		return fmt.Errorf("exit %d: %s%s", code, stderr.String(), stdout.String())
	}
	return nil
}

func cliRows() []row {
	pluginRow := func(name, says string, args ...string) row {
		return row{surface: pluginSurface, name: name, want: refusedNaming(says),
			send: func(t *testing.T, e *env) (shown, error) { return nil, kubectlKmaint(e, args...) }}
	}
	daemonRow := func(name, says string, args ...string) row {
		return row{surface: daemonSurface, name: name, want: refusedNaming(says),
			send: func(t *testing.T, e *env) (shown, error) { return nil, kmaintDaemon(args...) }}
	}
	operatorRow := func(name, says string, opts operator.Options) row {
		return row{surface: operatorSurface, name: name, want: refusedNaming(says),
			send: func(t *testing.T, e *env) (shown, error) {
				if err := opts.Validate(); err != nil {
					return nil, err
				}
				return nil, errors.New("")
			}}
	}
	return []row{
		pluginRow("request without a reason", "reason", "request", openNodes[0]),
		pluginRow("request with a blank reason", "--reason", "request", openNodes[0], "--reason", "   "),
		pluginRow("request with a newline in the reason", "--reason", "request", openNodes[0], "--reason", "a\nb"),
		pluginRow("request with a terminal escape", "--reason", "request", openNodes[0], "--reason", "\x1b]0;owned\x07"),
		pluginRow("request with a reason of 600 bytes", "--reason", "request", openNodes[0], "--reason", strings.Repeat("r", 600)),
		pluginRow("request for a node that does not exist", "not found", "request", "no-such-node", "--reason", "x"),
		pluginRow("request for two nodes", "arg", "request", openNodes[0], openNodes[1], "--reason", "x"),
		pluginRow("request for a second time", "already has an open request", "request", witnessNode, "--reason", "again"),
		pluginRow("pause a pool that does not exist", "no MaintenancePool named", "pause", "no-such-pool"),
		pluginRow("rollout a config with a space", "not a valid desiredConfig", "rollout", openPool, "--config", "os 1.2"),
		pluginRow("rollout a config of 300 characters", "not a valid desiredConfig", "rollout", openPool, "--config", strings.Repeat("c", 300)),
		pluginRow("rollout a pool that does not exist", "no MaintenancePool named", "rollout", "no-such-pool", "--config", "v2"),
		pluginRow("status in an unknown format", "output", "status", "-o", "toml"),
		pluginRow("history without a node", "arg", "history"),
		pluginRow("an unknown command", "unknown command", "reboot-everything"),
		pluginRow("an unknown flag", "unknown flag", "status", "--all-the-things"),
		daemonRow("request-reboot without a reason", "reason", "request-reboot"),
		daemonRow("request-reboot with a newline", "reason", "request-reboot", "kernel\nKMAINT_SOURCE=config"),
		daemonRow("request-reboot with a terminal escape", "reason", "request-reboot", "\x1b[2Jkernel"),
		daemonRow("request-reboot with a reason of 600 bytes", "reason", "request-reboot", strings.Repeat("r", 600)),
		daemonRow("run with a negative reboot timeout", "--reboot-timeout", "run", "--node-name", "n", "--reboot-timeout=-1s", "--kubeconfig", "/nonexistent"),
		daemonRow("run with a reboot timeout of 1ms", "--reboot-timeout", "run", "--node-name", "n", "--reboot-timeout=1ms", "--kubeconfig", "/nonexistent"),
		daemonRow("run with a reboot timeout that is not a duration", "reboot-timeout", "run", "--reboot-timeout=soon"),
		daemonRow("run with a boot ID file that does not exist", "--boot-id-file=/nonexistent/boot_id", "run", "--node-name", "n", "--boot-id-file=/nonexistent/boot_id", "--kubeconfig", "/nonexistent"),
		daemonRow("run with a boot ID file that holds no boot ID", "not a boot ID", "run", "--node-name", "n", "--boot-id-file=/etc/passwd", "--kubeconfig", "/nonexistent"),
		daemonRow("an unknown command", "unknown command", "reboot-now"),
		operatorRow("negative drain poll interval", "--drain-poll-interval", operator.Options{DrainPollInterval: -1}),
		operatorRow("negative Prometheus timeout", "--prometheus-timeout", operator.Options{PrometheusTimeout: -1}),
		operatorRow("negative blocking query interval", "--blocking-query-interval", operator.Options{BlockingQueryInterval: -1}),
		operatorRow("webhook certificate without its key", "--alert-webhook-key-file", operator.Options{AlertWebhookCertFile: "/tls.crt"}),
		operatorRow("hooks in kube-system", "--hooks-namespace=kube-system", operator.Options{HooksNamespace: "kube-system"}),
		operatorRow("hooks service account not a name", "--hooks-service-account", operator.Options{HooksServiceAccount: "system:masters"}),
		operatorRow("hooks priority class not a name", "--hooks-priority-class", operator.Options{HooksPriorityClass: "Very High"}),
	}
}
