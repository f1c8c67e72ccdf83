package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"
)

// promtool returns the path of Prometheus's promtool, or skips t when it is
// not installed (fails it under CI, where .ci/run installs it).
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("promtool not found: .ci/run installs it with Debian's prometheus package")
		}
		t.Skip("promtool not found: apt-get install --no-install-recommends prometheus (as .ci/run does) to check the alerting rules")
	}
	return p
}

func runPromtool(t *testing.T, promtool string, args ...string) {
	t.Helper()
	out, err := exec.Command(promtool, args...).CombinedOutput()
	if err != nil {
		t.Errorf("promtool %v: %v\n%s", args, err, out)
	}
}

// TestAlertRules checks the alerting rules with promtool: the rule file's
// syntax and expressions, its unit tests (prometheus/alerts_test.yaml), and
// the rules of the PrometheusRule each set of values renders.
func TestAlertRules(t *testing.T) {
	pt := promtool(t)
	runPromtool(t, pt, "check", "rules", "prometheus/alerts.yaml")
	runPromtool(t, pt, "test", "rules", "prometheus/alerts_test.yaml")
	for name, values := range valueSets(t) {
		files, err := Render(ChartDir, Release, values)
		if err != nil {
			t.Fatalf("%s values: %v", name, err)
		}
		text, ok := files["prometheusrule.yaml"]
		if !ok {
			continue
		}
		var rule struct {
			Spec map[string]any `json:"spec"`
		}
		if err := yaml.Unmarshal([]byte(text), &rule); err != nil {
			t.Fatalf("%s values: %v", name, err)
		}
		data, err := yaml.Marshal(rule.Spec)
		if err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(t.TempDir(), name+"-rules.yaml")
		if err := os.WriteFile(f, data, 0o644); err != nil {
			t.Fatal(err)
		}
		runPromtool(t, pt, "check", "rules", f)
	}
}
