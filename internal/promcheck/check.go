package promcheck

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"
)

// Checker checks expressions against one scrape.
type Checker struct {
	Exported Exported
	// Extra are the labels the scraper adds to every series: job and
	// instance, and those its service discovery attaches (with
	// prometheus-operator: namespace, pod, container, service, endpoint).
	Extra []string
}

// Check returns a problem for every metric expr selects that is not
// exported and every label it names that the series there do not carry,
// or the syntax error that stopped it.
func (c Checker) Check(expr string) []error {
	_, errs := c.Labels(expr)
	return errs
}

// grafanaVariable is a dashboard variable, $name or ${name}. Grafana
// replaces it before Prometheus sees the expression; where it stands for a
// number or a range ([$__rate_interval]) any duration parses, and within a
// matcher's value its text does not matter, since values are not checked.
// $1 (label_replace's replacement) is not one.
var grafanaVariable = regexp.MustCompile(`\$(\{[^}]*\}|[A-Za-z_]\w*)`)

// Labels returns the labels of expr's result (none for a scalar) and the
// problems Check reports.
func (c Checker) Labels(expr string) ([]string, []error) {
	e, err := parser.NewParser(parser.Options{}).ParseExpr(grafanaVariable.ReplaceAllString(expr, "1m"))
	if err != nil {
		return nil, []error{err}
	}
	w := walker{c: c}
	v := w.walk(e)
	return slices.Sorted(maps.Keys(v.labels)), w.problems
}

// value is what an expression evaluates to, as far as labels go: a
// scalar's or a string's is an empty set, as is an aggregation's without
// grouping.
type value struct {
	labels map[string]bool // nil when not known (a metric not exported), so that one miss is one problem
	from   []string        // the metrics it comes from, for messages
}

func (v value) has(l string) bool { return v.labels == nil || v.labels[l] }

func (v value) describe() string {
	if len(v.from) == 0 {
		return "the expression"
	}
	return strings.Join(v.from, ", ")
}

func (v value) list() string {
	return "{" + strings.Join(slices.Sorted(maps.Keys(v.labels)), ", ") + "}"
}

// walker computes, node by node, the labels of an expression's series and
// collects what it names that they lack.
type walker struct {
	c        Checker
	problems []error
}

func (w *walker) problem(format string, args ...any) {
	w.problems = append(w.problems, fmt.Errorf(format, args...))
}

// walk returns the labels of e's result, walking every subexpression, those
// whose labels do not flow on too, so that each selector is checked.
func (w *walker) walk(e parser.Expr) value {
	switch e := e.(type) {
	case *parser.VectorSelector:
		return w.selector(e)
	case *parser.MatrixSelector:
		return w.walk(e.VectorSelector)
	case *parser.SubqueryExpr:
		return w.walk(e.Expr)
	case *parser.ParenExpr:
		return w.walk(e.Expr)
	case *parser.UnaryExpr:
		return w.walk(e.Expr)
	case *parser.AggregateExpr:
		return w.aggregate(e)
	case *parser.BinaryExpr:
		return w.binary(e)
	case *parser.Call:
		return w.call(e)
	}
	return value{labels: map[string]bool{}} // a number, a string or a duration
}

// selector starts a flow: an exported metric's labels and the scraper's.
// A metric not exported has labels not known, so that what names them
// downstream adds no problem to the one already reported.
func (w *walker) selector(s *parser.VectorSelector) value {
	if s.Name == "" {
		// {__name__=~"..."}: the metric could be checked only by reading
		// the regular expression, so it is refused.
		w.problem("%s: a selector without a metric name cannot be checked", s)
		return value{}
	}
	exported, ok := w.c.Exported[s.Name]
	if !ok {
		w.problem("metric %s is not exported", s.Name)
		return value{from: []string{s.Name}}
	}
	v := value{labels: map[string]bool{}, from: []string{s.Name}}
	maps.Copy(v.labels, exported)
	for _, l := range w.c.Extra {
		v.labels[l] = true
	}
	for _, m := range s.LabelMatchers {
		if m.Name != model.MetricNameLabel && !v.has(m.Name) {
			w.problem("%s{%s}: %s has no label %s (it has %s)", s.Name, m.Name, s.Name, m.Name, v.list())
		}
	}
	return v
}

// aggregate checks the labels by or without names; the result keeps
// those of by, or all but those of without (topk and bottomk keep all), and
// count_values adds the one its parameter names.
func (w *walker) aggregate(a *parser.AggregateExpr) value {
	if a.Param != nil {
		w.walk(a.Param) // quantile(scalar(v), ...) selects too
	}
	v := w.walk(a.Expr)
	grouping := "by"
	if a.Without {
		grouping = "without"
	}
	for _, l := range a.Grouping {
		if !v.has(l) {
			w.problem("%s %s (%s): %s has no label %s (it has %s)", a.Op, grouping, strings.Join(a.Grouping, ", "), v.describe(), l, v.list())
		}
	}
	out := value{labels: map[string]bool{}, from: v.from}
	switch {
	case a.Op == parser.TOPK || a.Op == parser.BOTTOMK:
		out.labels = v.labels
	case a.Without && v.labels == nil:
		out.labels = nil
	case a.Without:
		for l := range v.labels {
			if !slices.Contains(a.Grouping, l) {
				out.labels[l] = true
			}
		}
	default:
		for _, l := range a.Grouping {
			out.labels[l] = true
		}
	}
	if s, ok := a.Param.(*parser.StringLiteral); ok && a.Op == parser.COUNT_VALUES && out.labels != nil {
		out.labels[s.Val] = true
	}
	return out
}

// call takes every function the parser accepts (Prometheus' own, less the
// experimental ones, which a Prometheus refuses unless told otherwise) to
// keep the labels of its first vector or range argument, but for those
// that name or change labels, handled here by name.
func (w *walker) call(c *parser.Call) value {
	args := make([]value, len(c.Args))
	vec := -1
	for i, a := range c.Args {
		args[i] = w.walk(a)
		if t := a.Type(); vec < 0 && (t == parser.ValueTypeVector || t == parser.ValueTypeMatrix) {
			vec = i
		}
	}
	switch name := c.Func.Name; {
	case name == "histogram_quantile":
		v := args[1]
		if !v.has("le") {
			w.problem("histogram_quantile: %s has no label le (it has %s): aggregate by le", v.describe(), v.list())
		}
		out := value{labels: maps.Clone(v.labels), from: v.from}
		delete(out.labels, "le")
		return out
	case name == "label_replace" || name == "label_join":
		v := args[0]
		src := c.Args[3:]
		if name == "label_replace" {
			src = c.Args[3:4]
		}
		for _, s := range src {
			if l := stringArg(s); l != "" && !v.has(l) {
				w.problem("%s: %s has no label %s (it has %s)", name, v.describe(), l, v.list())
			}
		}
		out := value{labels: maps.Clone(v.labels), from: v.from}
		if dst := stringArg(c.Args[1]); out.labels != nil && dst != "" {
			out.labels[dst] = true
		}
		return out
	case name == "absent" || name == "absent_over_time" || c.Type() != parser.ValueTypeVector || vec < 0:
		// absent's labels are its selector's equality matchers, taken
		// here as none; vector(s), scalar(v), time() and day_of_week()
		// (of vector(time())) have none.
		return value{labels: map[string]bool{}}
	}
	return args[vec]
}

// stringArg is a string argument's text, or "" if it is computed.
func stringArg(e parser.Expr) string {
	for {
		switch x := e.(type) {
		case *parser.StringLiteral:
			return x.Val
		case *parser.ParenExpr:
			e = x.Expr
		default:
			return ""
		}
	}
}

// binary applies a binary operator's matching to its operands' labels.
func (w *walker) binary(b *parser.BinaryExpr) value {
	lhs, rhs := w.walk(b.LHS), w.walk(b.RHS)
	switch {
	case b.LHS.Type() == parser.ValueTypeScalar && b.RHS.Type() == parser.ValueTypeScalar:
		return value{labels: map[string]bool{}}
	case b.LHS.Type() == parser.ValueTypeScalar:
		return rhs
	case b.RHS.Type() == parser.ValueTypeScalar:
		return lhs
	}
	m := b.VectorMatching
	ignoring := !m.On && len(m.MatchingLabels) > 0
	w.matching(b, lhs, rhs)
	from := append(slices.Clone(lhs.from), rhs.from...)
	switch {
	case b.Op == parser.LAND || b.Op == parser.LUNLESS:
		return value{labels: lhs.labels, from: from}
	case b.Op == parser.LOR && (lhs.labels == nil || rhs.labels == nil):
		return value{from: from}
	case b.Op == parser.LOR:
		u := maps.Clone(lhs.labels)
		maps.Copy(u, rhs.labels)
		return value{labels: u, from: from}
	case m.Card == parser.CardManyToOne:
		return value{labels: include(lhs.labels, m.Include), from: from}
	case m.Card == parser.CardOneToMany:
		return value{labels: include(rhs.labels, m.Include), from: from}
	case b.Op.IsComparisonOperator() && !b.ReturnBool:
		return value{labels: lhs.labels, from: from}
	case m.On:
		return value{labels: include(map[string]bool{}, m.MatchingLabels), from: from}
	case ignoring && lhs.labels != nil:
		out := maps.Clone(lhs.labels)
		for _, l := range m.MatchingLabels {
			delete(out, l)
		}
		return value{labels: out, from: from}
	}
	return value{labels: lhs.labels, from: from}
}

// include returns labels with those of extra added, or nil if labels is
// not known.
func include(labels map[string]bool, extra []string) map[string]bool {
	if labels == nil {
		return nil
	}
	out := maps.Clone(labels)
	for _, l := range extra {
		out[l] = true
	}
	return out
}

// matching reports the labels a vector-to-vector operator's on, ignoring
// and group_left/right name that its sides lack, and a one-to-one match
// without on or ignoring whose sides' labels differ, which matches nothing.
func (w *walker) matching(b *parser.BinaryExpr, lhs, rhs value) {
	m := b.VectorMatching
	ignoring := !m.On && len(m.MatchingLabels) > 0
	what := fmt.Sprintf("%s %s %s", lhs.describe(), b.Op, rhs.describe())
	for _, l := range m.MatchingLabels {
		switch {
		case m.On && !lhs.has(l):
			w.problem("%s on (%s): %s has no label %s", what, l, lhs.describe(), l)
		case m.On && !rhs.has(l):
			w.problem("%s on (%s): %s has no label %s", what, l, rhs.describe(), l)
		case ignoring && !lhs.has(l) && !rhs.has(l):
			w.problem("%s ignoring (%s): neither side has label %s", what, l, l)
		}
	}
	group, one := "group_left", rhs
	if m.Card == parser.CardOneToMany {
		group, one = "group_right", lhs
	}
	for _, l := range m.Include {
		if !one.has(l) {
			w.problem("%s %s (%s): %s has no label %s", what, group, l, one.describe(), l)
		}
	}
	if m.Card == parser.CardOneToOne && !m.On && !ignoring && lhs.labels != nil && rhs.labels != nil && !maps.Equal(lhs.labels, rhs.labels) {
		w.problem("%s: the sides' labels differ, %s and %s, so no series match: say on (...) or ignoring (...)", what, lhs.list(), rhs.list())
	}
}
