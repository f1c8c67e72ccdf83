package deploy

import (
	"context"
	"fmt"
	"os"
	"path"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// ChartDir is the chart's directory, under deploy/.
const ChartDir = "chart/ovn-sync"

// Release is what the plain manifests are rendered as: `helm install ovn-sync -n kube-system`.
var Release = common.ReleaseOptions{Name: "ovn-sync", Namespace: "kube-system", IsInstall: true}

// header opens every YAML file Manifests writes.
const header = "# Rendered from deploy/chart/ovn-sync by `make manifests`: edit the chart, not this file.\n"

// Render renders the chart in dir with values over its defaults, as
// `helm template` does for rel: values checked against the chart's schema,
// a missing value an error. It returns each template's output by its path
// under templates/ ("rbac.yaml"), leaving out NOTES.txt and the templates
// that render nothing.
func Render(dir string, rel common.ReleaseOptions, values map[string]any) (map[string]string, error) {
	ch, err := loader.LoadDir(dir)
	if err != nil {
		return nil, err
	}
	return render(ch, rel, values)
}

func render(ch *chartv2.Chart, rel common.ReleaseOptions, values map[string]any) (map[string]string, error) {
	top, err := util.ToRenderValues(ch, values, rel, nil)
	if err != nil {
		return nil, err
	}
	out, err := engine.Engine{Strict: true}.RenderWithContext(context.Background(), ch, top)
	if err != nil {
		return nil, err
	}
	files := map[string]string{}
	prefix := ch.Name() + "/templates/"
	for name, text := range out {
		name = strings.TrimPrefix(name, prefix)
		if name == "NOTES.txt" || strings.TrimSpace(text) == "" {
			continue
		}
		files[name] = text
	}
	return files, nil
}

// ReadValues reads a values file.
func ReadValues(file string) (map[string]any, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var v map[string]any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return v, nil
}

// Manifests renders the files of deploy/ that are made from the chart in
// dir, by their paths under deploy/:
//   - rbac.yaml, config.yaml, deployment.yaml: the default values;
//   - sidecar-rbac.yaml: rbac.yaml in mode sidecar;
//   - sidecar-patch.yaml: mode sidecar, sidecar.patchOnly;
//   - prometheus/alerts.yaml: the rule file of the chart's PrometheusRule;
//   - grafana/ovn-sync.json: the dashboard of its ConfigMap.
func Manifests(dir string) (map[string]string, error) {
	ch, err := loader.LoadDir(dir)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	take := func(values map[string]any, from, to string) error {
		files, err := render(ch, Release, values)
		if err != nil {
			return err
		}
		text, ok := files[from]
		if !ok {
			return fmt.Errorf("templates/%s renders nothing with %v", from, values)
		}
		out[to] = header + strings.Trim(text, "\n") + "\n"
		return nil
	}
	sidecar := map[string]any{"mode": "sidecar"}
	for _, f := range []struct {
		values   map[string]any
		from, to string
	}{
		{nil, "rbac.yaml", "rbac.yaml"},
		{nil, "config.yaml", "config.yaml"},
		{nil, "deployment.yaml", "deployment.yaml"},
		{sidecar, "rbac.yaml", "sidecar-rbac.yaml"},
		{map[string]any{"mode": "sidecar", "sidecar": map[string]any{"patchOnly": true}}, "sidecar-patch.yaml", "sidecar-patch.yaml"},
	} {
		if err := take(f.values, f.from, f.to); err != nil {
			return nil, err
		}
	}

	// The rule file is the chart's template ovn-sync.alerts, rendered alone
	// with the defaults.
	alerts := *ch
	alerts.Templates = append(append([]*common.File(nil), ch.Templates...),
		&common.File{Name: "templates/alerts.yaml", Data: []byte(`{{ include "ovn-sync.alerts" . }}`)})
	files, err := render(&alerts, Release, nil)
	if err != nil {
		return nil, err
	}
	out["prometheus/alerts.yaml"] = header + strings.Trim(files["alerts.yaml"], "\n") + "\n"

	files, err = render(ch, Release, map[string]any{"dashboard": map[string]any{"enabled": true}})
	if err != nil {
		return nil, err
	}
	var cm corev1.ConfigMap
	if err := yaml.UnmarshalStrict([]byte(files["dashboard.yaml"]), &cm); err != nil {
		return nil, fmt.Errorf("templates/dashboard.yaml: %w", err)
	}
	dash, ok := cm.Data["ovn-sync.json"]
	if !ok {
		return nil, fmt.Errorf("templates/dashboard.yaml: no ovn-sync.json in %s", cm.Name)
	}
	out[path.Join("grafana", "ovn-sync.json")] = dash
	return out, nil
}
