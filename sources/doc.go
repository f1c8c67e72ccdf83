// Package sources reads the Kubernetes objects ovn-sync reconciles and hands
// them to package desired as desired.Inputs.
//
// ReadManifests reads YAML or JSON manifest files the way kubectl does
// (multi-document files, kind: List, directories); it feeds the one-shot
// plan and apply commands and the demo.
package sources
