package promcheck

import (
	"io"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Exported is what a scrape exports: the name of each series (a
// histogram's _bucket, _sum and _count; a summary's own name, _sum and
// _count) with the names of the labels its samples carry.
type Exported map[string]map[string]bool

// ParseScrape reads a Prometheus text exposition, as /metrics serves it,
// and adds the series Prometheus makes of every target it scrapes (up).
func ParseScrape(r io.Reader) (Exported, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, err
	}
	exp := Exported{}
	add := func(name string, m *dto.Metric, extra string) {
		set := exp[name]
		if set == nil {
			set = map[string]bool{}
			exp[name] = set
		}
		for _, l := range m.GetLabel() {
			set[l.GetName()] = true
		}
		if extra != "" {
			set[extra] = true
		}
	}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			switch f.GetType() {
			case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
				add(name+"_bucket", m, "le")
				add(name+"_sum", m, "")
				add(name+"_count", m, "")
			case dto.MetricType_SUMMARY:
				add(name, m, "quantile")
				add(name+"_sum", m, "")
				add(name+"_count", m, "")
			default:
				add(name, m, "")
			}
		}
	}
	// The series Prometheus makes of every target it scrapes, with only
	// the labels it gives every series (Checker.Extra).
	for _, name := range scraperSeries {
		exp[name] = map[string]bool{}
	}
	return exp, nil
}

// scraperSeries are the series Prometheus adds for each scrape.
var scraperSeries = []string{"up", "scrape_duration_seconds", "scrape_samples_scraped",
	"scrape_samples_post_metric_relabeling", "scrape_series_added"}
