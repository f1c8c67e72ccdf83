// Package promcheck checks PromQL expressions (a dashboard's panels, alerting
// rules) against what a process exports. It parses an expression far enough
// to know, at each step, which labels its series carry, and reports every
// metric it selects that a /metrics scrape lacks, and every label it names
// (in a matcher, by/without, on/ignoring, group_left/right, label_replace,
// histogram_quantile's le) that the series there do not carry:
//
//	exp, err := promcheck.ParseScrape(resp.Body)
//	c := promcheck.Checker{Exported: exp, Extra: []string{"job", "instance"}}
//	for _, err := range c.Check(`sum by (kind) (rate(ovn_sync_passes_total[5m]))`) { ... }
//
// It knows PromQL's syntax, the aggregation operators and the functions of
// Prometheus 2.x and 3.x; an unknown function is a problem rather than a guess.
// Label values are not checked: a scrape shows only the values that occurred.
package promcheck
