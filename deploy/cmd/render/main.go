// Command render writes the files of deploy/ that are made from the Helm
// chart in deploy/chart/ovn-sync (see deploy.Manifests). Run from the
// module's root, as `make manifests` does; deploy's tests fail while a
// written file differs from the chart's rendering.
package main

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/ovn-sync/ovn-sync/deploy"
)

func main() {
	dir := flag.String("deploy", "deploy", "the deploy/ `directory`")
	flag.Parse()
	files, err := deploy.Manifests(filepath.Join(*dir, deploy.ChartDir))
	if err != nil {
		fmt.Fprintln(os.Stderr, "render:", err)
		os.Exit(1)
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		p := filepath.Join(*dir, name)
		if old, err := os.ReadFile(p); err == nil && string(old) == files[name] {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "render:", err)
			os.Exit(1)
		}
		if err := os.WriteFile(p, []byte(files[name]), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "render:", err)
			os.Exit(1)
		}
		fmt.Println("wrote", p)
	}
}
