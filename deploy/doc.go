// Package deploy holds the manifests that run ovn-sync in a cluster
// (rbac.yaml, config.yaml, deployment.yaml, sidecar-patch.yaml) and the
// Dockerfile. It has no code: its test checks that rbac.yaml grants exactly
// what run mode calls, with no wildcard.
package deploy
