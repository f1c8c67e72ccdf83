package promcheck

import (
	"slices"
	"strings"
	"testing"
)

const scrape = `# HELP passes_total Passes.
# TYPE passes_total counter
passes_total{kind="full",result="success"} 3
passes_total{kind="change",result="error"} 1
# HELP pass_seconds Pass duration.
# TYPE pass_seconds histogram
pass_seconds_bucket{kind="full",le="0.1"} 1
pass_seconds_bucket{kind="full",le="+Inf"} 3
pass_seconds_sum{kind="full"} 0.5
pass_seconds_count{kind="full"} 3
# HELP leader 1 while leading.
# TYPE leader gauge
leader 1
# HELP problems Problems by reason.
# TYPE problems gauge
problems{reason="BadIP"} 2
# HELP rpc_seconds RPC latency.
# TYPE rpc_seconds summary
rpc_seconds{quantile="0.5"} 0.1
rpc_seconds_sum 1
rpc_seconds_count 10
`

func checker(t *testing.T) Checker {
	t.Helper()
	exp, err := ParseScrape(strings.NewReader(scrape))
	if err != nil {
		t.Fatal(err)
	}
	return Checker{Exported: exp, Extra: []string{"job", "instance"}}
}

func TestParseScrape(t *testing.T) {
	c := checker(t)
	for name, want := range map[string][]string{
		"passes_total":        {"kind", "result"},
		"pass_seconds_bucket": {"kind", "le"},
		"pass_seconds_sum":    {"kind"},
		"pass_seconds_count":  {"kind"},
		"leader":              nil,
		"problems":            {"reason"},
		"rpc_seconds":         {"quantile"},
		"rpc_seconds_count":   nil,
	} {
		labels, ok := c.Exported[name]
		if !ok {
			t.Errorf("ParseScrape: no %s", name)
			continue
		}
		var got []string
		for l := range labels {
			got = append(got, l)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("ParseScrape: %s has labels %v, want %v", name, got, want)
		}
	}
	if _, ok := c.Exported["pass_seconds"]; ok {
		t.Errorf("ParseScrape: a histogram's own name is not a series")
	}
}

func TestCheck(t *testing.T) {
	c := checker(t)
	for _, tc := range []struct {
		expr string
		want []string // substrings of the problems, in order; none for a clean expression
	}{
		// Clean.
		{`sum by (kind, result) (rate(passes_total{job=~"$job", instance=~"$instance"}[$__rate_interval]))`, nil},
		{`sum(rate(passes_total[5m])) by (kind)`, nil},
		{`histogram_quantile(0.99, sum by (kind, le) (rate(pass_seconds_bucket[5m])))`, nil},
		{`sum(rate(pass_seconds_sum[5m])) / sum(rate(pass_seconds_count[5m]))`, nil},
		{`time() - max by (job) (leader) > 900`, nil},
		{`max by (job, reason) (problems * on (job, instance) group_left leader) > 0`, nil},
		{`sum by (job) (increase(passes_total{result="error"}[10m])) > 0 unless on (job) sum by (job) (increase(passes_total{result="success"}[10m])) > 0`, nil},
		{`label_replace(leader, "who", "$1", "instance", "(.*):.*")`, nil},
		{`count without (instance) (leader offset 5m)`, nil},
		{`-leader ^ 2 + 1e3 * 0x10`, nil},
		{`rate(passes_total[5m:1m]) # a comment`, nil},
		{`topk(3, sum by (kind) (passes_total))`, nil},
		{`rpc_seconds{quantile="0.5"}`, nil},
		{`max_over_time(leader[${__range}] @ start())`, nil},
		{`label_join(passes_total, "both", "-", "kind", "result")`, nil},
		{`passes_total / ignoring (result) group_left passes_total`, nil},

		// Broken.
		{`rate(passes[5m])`, []string{"metric passes is not exported"}},
		{`sum by (reason) (rate(passes_total[5m]))`, []string{"sum by (reason): passes_total has no label reason"}},
		{`passes_total{reason="x"}`, []string{"passes_total has no label reason"}},
		{`histogram_quantile(0.9, sum by (kind) (rate(pass_seconds_bucket[5m])))`, []string{"histogram_quantile: pass_seconds_bucket has no label le"}},
		{`sum by (kind) (sum by (result) (passes_total))`, []string{"sum by (kind): passes_total has no label kind (it has {result})"}},
		{`problems * on (reason) leader`, []string{"leader has no label reason"}},
		{`problems / leader`, []string{"the sides' labels differ"}},
		{`leader * on (job) group_left (reason, kind) passes_total`, []string{"group_left (reason): passes_total has no label reason"}},
		{`label_replace(leader, "who", "$1", "pod", "(.*)")`, []string{"label_replace: leader has no label pod"}},
		{`{__name__="leader"}`, []string{"without a metric name"}},
		{`quantile(scalar(passes), leader)`, []string{"metric passes is not exported"}},
		{`label_join(passes_total, "both", "-", "kind", "reason")`, []string{"label_join: passes_total has no label reason"}},
		{`passes_total / ignoring (reason) leader`, []string{"neither side has label reason"}},
		{`sort_by_label(leader, "job")`, []string{`function "sort_by_label" is not enabled`}},
		{`frobnicate(leader)`, []string{`unknown function with name "frobnicate"`}},
		{`sum by (kind) (rate(passes_total[5m])`, []string{"unclosed left parenthesis"}},
	} {
		errs := c.Check(tc.expr)
		if tc.want == nil && len(errs) > 0 {
			t.Errorf("Check(%s) = %v, want no problem", tc.expr, errs)
			continue
		}
		if len(errs) != len(tc.want) {
			t.Errorf("Check(%s) = %v, want %d problem(s) containing %q", tc.expr, errs, len(tc.want), tc.want)
			continue
		}
		for i, w := range tc.want {
			if !strings.Contains(errs[i].Error(), w) {
				t.Errorf("Check(%s) problem %d = %v, want one containing %q", tc.expr, i, errs[i], w)
			}
		}
	}
}

func TestLabels(t *testing.T) {
	c := checker(t)
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{`passes_total`, []string{"instance", "job", "kind", "result"}},
		{`sum by (kind) (passes_total)`, []string{"kind"}},
		{`sum without (result) (passes_total)`, []string{"instance", "job", "kind"}},
		{`histogram_quantile(0.5, sum by (le, kind) (rate(pass_seconds_bucket[5m])))`, []string{"kind"}},
		{`problems * on (job, instance) group_left leader`, []string{"instance", "job", "reason"}},
		{`problems * on (job, instance) leader`, []string{"instance", "job"}},
		{`leader > 0`, []string{"instance", "job"}},
		{`count_values("value", leader)`, []string{"value"}},
		{`label_replace(leader, "who", "$1", "instance", "(.*)")`, []string{"instance", "job", "who"}},
		{`sum by (kind) (passes_total) or sum by (reason) (problems)`, []string{"kind", "reason"}},
		{`passes_total / ignoring (result) passes_total`, []string{"instance", "job", "kind"}},
		{`time()`, nil},
	} {
		got, errs := c.Labels(tc.expr)
		if len(errs) > 0 || !slices.Equal(got, tc.want) {
			t.Errorf("Labels(%s) = %v, %v; want %v", tc.expr, got, errs, tc.want)
		}
	}
}
