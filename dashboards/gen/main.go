// Command gen writes kmaint's Grafana dashboards as JSON files into a
// directory (dashboards/ by default, run from the repository root).
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kmaint/kmaint/dashboards"
)

func main() {
	out := flag.String("out", "dashboards", "directory to write the dashboard JSON files into")
	flag.Parse()
	if err := write(*out); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func write(dir string) error {
	files, err := dashboards.Render()
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.Name), f.JSON, 0o644); err != nil {
			return fmt.Errorf("write dashboard %s: %w", f.Name, err)
		}
	}
	return nil
}
