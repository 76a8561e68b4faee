package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/cmd/kubectl-kmaint/report"
)

// ReportOptions are the report command's.
type ReportOptions struct {
	// File is where the page goes.
	File string
	// Now is the moment the report describes; zero is the time of the call.
	Now time.Time
}

func newReportCommand(k *kube) *cobra.Command {
	o := ReportOptions{}
	cmd := &cobra.Command{
		Use:   "report [-f kmaint-report.html]",
		Short: "Write an HTML report of the cluster's reboots",
		Long: `Write the rollout report, one HTML page with no outside resources: per pool, a
timeline of every node's maintenances (waiting, draining, rebooting, settling,
failed health checks marked), the pool's unavailable nodes over time against its
budget, a halted pool's failed node and check, failed health checks, and counts by
source and outcome.
It is built from every NodeMaintenance, MaintenancePool and Node in the cluster.`,
		Example: `  kubectl kmaint report
  kubectl kmaint report -f /tmp/rollout.html`,
		Args: cobra.NoArgs,
		RunE: k.run(func(cmd *cobra.Command, c client.Client, _ []string) error {
			return Report(cmd.Context(), c, out(cmd), o)
		}),
	}
	cmd.Flags().StringVarP(&o.File, "filename", "f", "kmaint-report.html", "File to write the report to.")
	_ = cmd.MarkFlagFilename("filename", "html")
	return cmd
}

// Report writes the HTML rollout report to o.File and prints its path.
func Report(ctx context.Context, c client.Reader, w io.Writer, o ReportOptions) (reterr error) {
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	if o.File == "" {
		return errors.New("no file to write the report to")
	}
	items, pools, nodes, err := report.Collect(ctx, c)
	if err != nil {
		return err
	}
	r, err := report.Build(items, pools, nodes, o.Now)
	if err != nil {
		return fmt.Errorf("build the report: %w", err)
	}
	f, err := os.Create(o.File)
	if err != nil {
		return err
	}
	defer func() {
		if err := f.Close(); err != nil {
			reterr = errors.Join(reterr, err)
		}
	}()
	if err := r.WriteHTML(f); err != nil {
		return fmt.Errorf("write %s: %w", o.File, err)
	}
	path, err := filepath.Abs(o.File)
	if err != nil {
		path = o.File
	}
	_, err = fmt.Fprintf(w, "Wrote %s: %d maintenances in %d pools\n", path, r.Summary.Maintenances, len(r.Pools))
	return err
}
