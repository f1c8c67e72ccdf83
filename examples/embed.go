// Package examples holds a small, realistic cluster (pods, a running VM, a
// stopped VM with a Multus network, a VM in mid-migration) and an ovn-sync
// config, embedded so that `ovn-sync demo` runs from anywhere.
package examples

import "embed"

// FS holds cluster/*.yaml (the manifests) and ovn-sync.yaml (the config).
//
//go:embed cluster/*.yaml ovn-sync.yaml
var FS embed.FS

// ClusterDir and ConfigFile are FS paths.
const (
	ClusterDir = "cluster"
	ConfigFile = "ovn-sync.yaml"
)
