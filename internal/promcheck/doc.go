// Package promcheck checks PromQL expressions (a dashboard's panels, alerting
// rules) against what a process exports. It parses an expression with
// Prometheus' own parser, walks the tree to know, at each node, which labels
// its series carry, and reports every metric it selects that a /metrics
// scrape lacks, and every label it names (in a matcher, by/without,
// on/ignoring, group_left/right, label_replace, label_join,
// histogram_quantile's le) that the series there do not carry:
//
//	exp, err := promcheck.ParseScrape(resp.Body)
//	c := promcheck.Checker{Exported: exp, Extra: []string{"job", "instance"}}
//	for _, err := range c.Check(`sum by (kind) (rate(ovn_sync_passes_total[5m]))`) { ... }
//
// It accepts what a Prometheus of the parser's version accepts without
// feature flags, so an experimental function is a syntax error; Grafana's
// variables ($name, ${name}) are read as a duration, as Grafana replaces
// them before Prometheus sees the expression. Label values are not checked:
// a scrape shows only the values that occurred.
package promcheck
