package deploy

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/ovn-sync/ovn-sync/internal/kubetest"
)

// valueSets are the chart's documented sets of values: its defaults and
// each file of ci/, by name.
func valueSets(t *testing.T) map[string]map[string]any {
	t.Helper()
	sets := map[string]map[string]any{"default": nil}
	files, err := filepath.Glob(filepath.Join(ChartDir, "ci", "*-values.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no value files in %s/ci: %v", ChartDir, err)
	}
	for _, f := range files {
		v, err := ReadValues(f)
		if err != nil {
			t.Fatal(err)
		}
		sets[strings.TrimSuffix(filepath.Base(f), "-values.yaml")] = v
	}
	return sets
}

// withPatchOnly is values in mode sidecar with sidecar.patchOnly set.
func withPatchOnly(values map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range values {
		out[k] = v
	}
	sc := map[string]any{"patchOnly": true}
	if old, ok := values["sidecar"].(map[string]any); ok {
		for k, v := range old {
			sc[k] = v
		}
		sc["patchOnly"] = true
	}
	out["sidecar"] = sc
	return out
}

// docs splits rendered templates into objects, in template order.
func docs(t *testing.T, files map[string]string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, name := range sortedKeys(files) {
		for i, doc := range strings.Split(files[name], "\n---") {
			var obj map[string]any
			if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
				t.Fatalf("templates/%s document %d: %v", name, i, err)
			}
			if len(obj) > 0 {
				out = append(out, &unstructured.Unstructured{Object: obj})
			}
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// TestManifestsRendered fails when a file of deploy/ differs from what the
// chart renders for it: the chart is the one source.
func TestManifestsRendered(t *testing.T) {
	files, err := Manifests(ChartDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range sortedKeys(files) {
		have, err := os.ReadFile(name)
		if err != nil {
			t.Errorf("%v: run make manifests", err)
			continue
		}
		if string(have) != files[name] {
			t.Errorf("deploy/%s differs from the chart's rendering (edit deploy/%s and run make manifests): %s",
				name, ChartDir, firstDifference(string(have), files[name]))
		}
	}
}

// firstDifference names the first line where have and want differ.
func firstDifference(have, want string) string {
	h, w := strings.Split(have, "\n"), strings.Split(want, "\n")
	for i := range max(len(h), len(w)) {
		var a, b string
		if i < len(h) {
			a = h[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			return fmt.Sprintf("line %d is %q, the chart renders %q", i+1, a, b)
		}
	}
	return "the same lines, but for the end of the last"
}

// TestChartLint runs Helm's linter on the chart with each set of values.
func TestChartLint(t *testing.T) {
	for name, values := range valueSets(t) {
		res := lint.RunAll(ChartDir, values, Release.Namespace)
		for _, m := range res.Messages {
			if m.Severity > support.InfoSev {
				t.Errorf("helm lint with %s values: %s", name, m)
			}
		}
	}
}

// container renders values and returns the ovn-sync container of the
// Deployment or of the sidecar patch.
func container(t *testing.T, values map[string]any) corev1.Container {
	t.Helper()
	files, err := Render(ChartDir, Release, values)
	if err != nil {
		t.Fatal(err)
	}
	text, ok := files["deployment.yaml"]
	if !ok {
		text = files["sidecar-patch.yaml"]
	}
	var d appsv1.Deployment
	if err := yaml.Unmarshal([]byte(text), &d); err != nil {
		t.Fatal(err)
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == "ovn-sync" {
			return c
		}
	}
	t.Fatalf("no ovn-sync container in %s", text)
	return corev1.Container{}
}

func env(c corev1.Container, name string) (string, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value, true
		}
	}
	return "", false
}

// TestGOMEMLIMIT checks the share of the memory limit the chart computes,
// and that the Go runtime accepts what it sets.
func TestGOMEMLIMIT(t *testing.T) {
	for _, tc := range []struct {
		limit   any // resources.limits.memory; nil: none
		percent int
		want    string // "": no GOMEMLIMIT
	}{
		{"1Gi", 90, "966367641"},
		{"512Mi", 90, "483183820"},
		{"2.5Gi", 85, "2281701376"},
		{"1G", 90, "900000000"},
		{"1500M", 50, "750000000"},
		{"3000Ki", 100, "3072000"},
		{"1000000000", 90, "900000000"},
		{1000000000, 90, "900000000"},
		{"1Gi", 0, ""},
		{nil, 90, ""},
	} {
		// A limit of nil removes the default one, as --set resources.limits=null does.
		res := map[string]any{"requests": map[string]any{"memory": "128Mi"}, "limits": nil}
		if tc.limit != nil {
			res["limits"] = map[string]any{"memory": tc.limit}
		}
		c := container(t, map[string]any{"resources": res, "goMemLimitPercent": tc.percent})
		got, ok := env(c, "GOMEMLIMIT")
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("limit %v at %d%%: GOMEMLIMIT = %q (set: %v), want %q", tc.limit, tc.percent, got, ok, tc.want)
			continue
		}
		if !ok {
			continue
		}
		// The runtime reads GOMEMLIMIT at start and dies on one it cannot
		// parse: this test binary, started again with it, must run.
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "GOMEMLIMIT="+got)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("GOMEMLIMIT=%s: the Go runtime refuses it: %v: %s", got, err, out)
		}
	}
}

// TestGOGC: goGC sets GOGC, and null (the default) leaves it to the
// runtime.
func TestGOGC(t *testing.T) {
	if got, ok := env(container(t, map[string]any{}), "GOGC"); ok {
		t.Errorf("GOGC = %q by default, want it unset", got)
	}
	if got, ok := env(container(t, map[string]any{"goGC": 50}), "GOGC"); got != "50" || !ok {
		t.Errorf("goGC 50: GOGC = %q (set: %v), want 50", got, ok)
	}
}

// TestChartRefuses checks that values which cannot work fail rendering,
// with a message that says why.
func TestChartRefuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values string
		want   string
	}{
		{"unknown mode", `mode: daemonset`, `'/mode': value must be one of 'standalone', 'sidecar'`},
		{"memory suffix", `resources: {limits: {memory: 1Zi}}`, `memory quantity "1Zi"`},
		{"percent", `goMemLimitPercent: 120`, `at most 100`},
		{"gogc", `goGC: 0`, `goGC`},
		{"resync", `resync: 5 minutes`, `duration "5 minutes"`},
		{"ssl without secret", `nb: {endpoints: ["ssl:10.0.0.1:6641"], tlsSecret: ""}`, `nb.tlsSecret must name`},
		{"replicas without election", `{leaderElection: {enabled: false}, standalone: {replicas: 2}}`, `every replica would write`},
		{"patch outside sidecar", `sidecar: {patchOnly: true}`, `needs mode sidecar`},
		{"unknown value", `replicas: 3`, `additional properties 'replicas' not allowed`},
	} {
		var v map[string]any
		if err := yaml.Unmarshal([]byte(tc.values), &v); err != nil {
			t.Fatal(err)
		}
		_, err := Render(ChartDir, Release, v)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Render(%s) = %v, want an error containing %q", tc.name, tc.values, err, tc.want)
		}
	}
}

// TestChartDryRun creates every object the chart renders, for each set of
// values, with a server-side dry run against a real kube-apiserver (with
// prometheus-operator's CRDs for the ServiceMonitor and PrometheusRule),
// and applies the sidecar patch to a stand-in for kube-ovn's ovn-central.
func TestChartDryRun(t *testing.T) {
	k := kubetest.StartBare(t)
	crds, err := filepath.Glob("testdata/crds/*.yaml")
	if err != nil || len(crds) == 0 {
		t.Fatalf("testdata/crds: %v", err)
	}
	k.InstallCRDFiles(crds...)
	ctx := context.Background()
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict"}
	for name, values := range valueSets(t) {
		files, err := Render(ChartDir, Release, values)
		if err != nil {
			t.Fatalf("%s values: %v", name, err)
		}
		objs := docs(t, files)
		if len(objs) == 0 {
			t.Fatalf("%s values: nothing rendered", name)
		}
		for _, obj := range objs {
			if ns := obj.GetNamespace(); ns != "" {
				k.Namespace(ns)
			}
			ri, err := k.ResourceFor(obj)
			if err != nil {
				t.Errorf("%s values: %s %s: %v", name, obj.GetKind(), obj.GetName(), err)
				continue
			}
			if _, err := ri.Create(ctx, obj, dryRun); err != nil {
				t.Errorf("%s values: create %s %s/%s: %v", name, obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
			}
		}
		if mode, _ := values["mode"].(string); mode == "sidecar" {
			patchSidecar(t, k, name, values)
		}
	}
}

// ovnCentral is the part of kube-ovn's ovn-central Deployment the patch
// meets: its container, the host path of its sockets, its service account.
const ovnCentral = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: ovn-central, namespace: kube-system}
spec:
  replicas: 3
  selector: {matchLabels: {app: ovn-central}}
  template:
    metadata: {labels: {app: ovn-central, component: network, type: infra}}
    spec:
      serviceAccountName: ovn-ovs
      hostNetwork: true
      containers:
      - name: ovn-central
        image: docker.io/kubeovn/kube-ovn:v1.15.0
        command: [/kube-ovn/start-db.sh]
        ports:
        - {name: metrics, containerPort: 10661}
        volumeMounts:
        - {name: host-run-ovn, mountPath: /var/run/ovn}
      volumes:
      - name: host-run-ovn
        hostPath: {path: /run/ovn}
`

// patchSidecar applies the sidecar patch the chart renders with values to
// ovn-central (created once), as a dry run, and checks the result.
func patchSidecar(t *testing.T, k *kubetest.Server, name string, values map[string]any) {
	t.Helper()
	ctx := context.Background()
	deployments := k.Kube.AppsV1().Deployments("kube-system")
	if _, err := deployments.Get(ctx, "ovn-central", metav1.GetOptions{}); err != nil {
		var d appsv1.Deployment
		if err := yaml.UnmarshalStrict([]byte(ovnCentral), &d); err != nil {
			t.Fatal(err)
		}
		if _, err := deployments.Create(ctx, &d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	files, err := Render(ChartDir, Release, withPatchOnly(values))
	if err != nil {
		t.Fatalf("%s values, patchOnly: %v", name, err)
	}
	if len(files) != 1 || files["sidecar-patch.yaml"] == "" {
		t.Fatalf("%s values, patchOnly: rendered %v, want sidecar-patch.yaml alone", name, sortedKeys(files))
	}
	patch, err := yaml.YAMLToJSON([]byte(files["sidecar-patch.yaml"]))
	if err != nil {
		t.Fatal(err)
	}
	got, err := deployments.Patch(ctx, "ovn-central", types.StrategicMergePatchType, patch,
		metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict"})
	if err != nil {
		t.Fatalf("%s values: patch ovn-central: %v", name, err)
	}
	spec := got.Spec.Template.Spec
	var names []string
	for _, c := range spec.Containers {
		names = append(names, c.Name)
	}
	if !slices.Equal(names, []string{"ovn-sync", "ovn-central"}) && !slices.Equal(names, []string{"ovn-central", "ovn-sync"}) {
		t.Errorf("%s values: patched ovn-central has containers %v, want ovn-central and ovn-sync", name, names)
	}
	if spec.ServiceAccountName != "ovn-ovs" {
		t.Errorf("%s values: patched ovn-central runs as %q, want its own ovn-ovs", name, spec.ServiceAccountName)
	}
	if len(spec.Volumes) != 2 {
		t.Errorf("%s values: patched ovn-central has volumes %+v, want host-run-ovn once and the config", name, spec.Volumes)
	}
}
