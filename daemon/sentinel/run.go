package sentinel

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"syscall"
	"time"
)

// maxOutput is how much of each of the command's stdout and stderr is kept.
const maxOutput = 64 << 10

// limitedBuffer keeps the first maxOutput bytes written to it and drops the
// rest, so that a command that prints without end costs nothing more.
type limitedBuffer struct{ bytes.Buffer }

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := maxOutput - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// run runs argv without a shell and returns its exit code and output. A
// command that cannot start, or ends by a signal, is an error.
func run(ctx context.Context, argv []string) (commandResult, error) {
	if len(argv) == 0 {
		return commandResult{}, errors.New("no command")
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var stdout, stderr limitedBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// Its own process group, so that the timeout kills what it started too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// A child that keeps the output open after the command exits is not
	// waited for long.
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	res := commandResult{stdout: stdout.Bytes(), stderr: stderr.Bytes(), exitCode: -1}
	var exit *exec.ExitError
	switch {
	case err == nil:
		res.exitCode = 0
	case errors.As(err, &exit) && exit.Exited():
		res.exitCode = exit.ExitCode()
	default:
		return res, err
	}
	return res, nil
}
