// Package deploy holds what runs ovn-sync in a cluster: the Helm chart in
// chart/ovn-sync, the plain manifests rendered from it (rbac.yaml,
// sidecar-rbac.yaml, config.yaml, deployment.yaml, sidecar-patch.yaml), the
// alerting rules (prometheus/alerts.yaml) and the Grafana dashboard
// (grafana/ovn-sync.json) rendered from it too, and the Dockerfile.
//
// Manifests renders those files with Helm's own engine; cmd/render writes
// them (make manifests). Its tests fail when a written file differs from the
// chart's rendering, check that the RBAC grants exactly what run mode calls,
// lint the chart, create every object it renders with a server-side dry run
// against a real kube-apiserver, and check the rules with promtool.
package deploy
