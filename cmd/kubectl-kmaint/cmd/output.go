package cmd

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	corev1 "k8s.io/api/core/v1"
)

// Output is a listing's format, as kubectl's -o.
type Output string

// The formats of a listing.
const (
	// OutputTable is the default: a table for people.
	OutputTable Output = ""
	// OutputWide is the table with more columns.
	OutputWide Output = "wide"
	// OutputJSON prints the API objects as JSON.
	OutputJSON Output = "json"
	// OutputYAML prints the API objects as YAML.
	OutputYAML Output = "yaml"
)

// addOutputFlag adds -o to a listing command.
func addOutputFlag(cmd *cobra.Command, o *Output) {
	cmd.Flags().StringVarP((*string)(o), "output", "o", "", "Output format: wide, json or yaml.")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(
		[]string{"wide", "json", "yaml"}, cobra.ShellCompDirectiveNoFileComp))
}

// check reports an unknown format.
func (o Output) check() error {
	switch o {
	case OutputTable, OutputWide, OutputJSON, OutputYAML:
		return nil
	}
	return fmt.Errorf("unknown output format %q: use wide, json or yaml", string(o))
}

// structured reports whether o prints objects rather than a table.
func (o Output) structured() bool { return o == OutputJSON || o == OutputYAML }

// printObjects writes objects as one v1 List in JSON or YAML, each with its
// apiVersion and kind, as kubectl get does for several kinds at once.
func printObjects(w io.Writer, c client.Client, o Output, objs []client.Object) error {
	list := &corev1.List{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("List"))
	for _, obj := range objs {
		gvk, err := apiutil.GVKForObject(obj, c.Scheme())
		if err != nil {
			return err
		}
		obj.GetObjectKind().SetGroupVersionKind(gvk)
		obj.SetManagedFields(nil)
		list.Items = append(list.Items, runtime.RawExtension{Object: obj})
	}
	var p printers.ResourcePrinter = &printers.JSONPrinter{}
	if o == OutputYAML {
		p = &printers.YAMLPrinter{}
	}
	return p.PrintObj(list, w)
}

// age says how long ago t was, as kubectl's AGE column; "-" for never.
func age(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return duration.HumanDuration(now.Sub(t))
}

// or returns s, or "-" when it is empty, for a table cell.
func or(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
