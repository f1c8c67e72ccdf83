package promcheck

import (
	"fmt"
	"maps"
	"slices"
	"strings"
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

// Labels returns the labels of expr's result (none for a scalar) and the
// problems Check reports.
func (c Checker) Labels(expr string) ([]string, []error) {
	toks, err := lex(expr)
	if err != nil {
		return nil, []error{err}
	}
	p := &parser{c: c, toks: toks}
	v, err := p.expr(0)
	if err == nil && p.peek().kind != tEOF {
		err = p.errorf("unexpected %q", p.peek().text)
	}
	if err != nil {
		return nil, append(p.problems, err)
	}
	return slices.Sorted(maps.Keys(v.labels)), p.problems
}

// value is what an expression evaluates to, as far as labels go.
type value struct {
	scalar bool
	str    string          // a string literal's text
	isStr  bool            // a string literal
	labels map[string]bool // a vector's labels; nil when not known (a metric not exported)
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

type parser struct {
	c        Checker
	toks     []token
	i        int
	problems []error
}

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("at %d: %s", p.peek().pos, fmt.Sprintf(format, args...))
}

func (p *parser) problem(format string, args ...any) {
	p.problems = append(p.problems, fmt.Errorf(format, args...))
}

func (p *parser) expect(k tokKind, what string) error {
	if p.peek().kind != k {
		return p.errorf("want %s, found %q", what, p.peek().text)
	}
	p.next()
	return nil
}

// Binary operators by precedence, lowest first; ^ is right-associative.
var precedence = map[string]int{
	"or": 1, "and": 2, "unless": 2,
	"==": 3, "!=": 3, "<": 3, "<=": 3, ">": 3, ">=": 3,
	"+": 4, "-": 4, "*": 5, "/": 5, "%": 5, "atan2": 5, "^": 6,
}

func (p *parser) binop() (string, int) {
	t := p.peek()
	if t.kind != tOp && t.kind != tIdent {
		return "", 0
	}
	op := t.text
	if t.kind == tIdent {
		op = strings.ToLower(op)
	}
	if t.kind == tOp && (op == "=" || op == "=~" || op == "!~" || op == "@") {
		return "", 0
	}
	prec, ok := precedence[op]
	if !ok {
		return "", 0
	}
	return op, prec
}

// expr parses a binary expression whose operators bind at least as
// tightly as minPrec.
func (p *parser) expr(minPrec int) (value, error) {
	lhs, err := p.unary()
	if err != nil {
		return value{}, err
	}
	for {
		op, prec := p.binop()
		if op == "" || prec < minPrec {
			return lhs, nil
		}
		p.next()
		m, err := p.matching()
		if err != nil {
			return value{}, err
		}
		nextMin := prec + 1
		if op == "^" {
			nextMin = prec
		}
		rhs, err := p.expr(nextMin)
		if err != nil {
			return value{}, err
		}
		lhs = p.combine(op, lhs, rhs, m)
	}
}

// match is a binary operator's modifiers.
type match struct {
	boolMod        bool
	on, ignoring   bool
	labels         []string
	group          string // "", "group_left", "group_right"
	groupLabels    []string
	hasMatchLabels bool
}

func (p *parser) matching() (match, error) {
	var m match
	if t := p.peek(); t.kind == tIdent && strings.EqualFold(t.text, "bool") {
		p.next()
		m.boolMod = true
	}
	if t := p.peek(); t.kind == tIdent && (strings.EqualFold(t.text, "on") || strings.EqualFold(t.text, "ignoring")) {
		p.next()
		m.on, m.ignoring = strings.EqualFold(t.text, "on"), strings.EqualFold(t.text, "ignoring")
		ls, err := p.labelList()
		if err != nil {
			return m, err
		}
		m.labels, m.hasMatchLabels = ls, true
		if t := p.peek(); t.kind == tIdent && (strings.EqualFold(t.text, "group_left") || strings.EqualFold(t.text, "group_right")) {
			p.next()
			m.group = strings.ToLower(t.text)
			if p.peek().kind == tLParen {
				if m.groupLabels, err = p.labelList(); err != nil {
					return m, err
				}
			}
		}
	}
	return m, nil
}

// labelList parses "(a, b, c)".
func (p *parser) labelList() ([]string, error) {
	if err := p.expect(tLParen, "("); err != nil {
		return nil, err
	}
	var out []string
	err := p.commaList(tRParen, ")", func() error {
		t := p.next()
		if t.kind != tIdent && t.kind != tString {
			return p.errorf("want a label name, found %q", t.text)
		}
		out = append(out, t.text)
		return nil
	})
	return out, err
}

// commaList parses items separated by commas up to the token close (its
// text closeText), the opening token read already, each by item; it
// consumes close.
func (p *parser) commaList(close tokKind, closeText string, item func() error) error {
	for p.peek().kind != close {
		if err := item(); err != nil {
			return err
		}
		if p.peek().kind == tComma {
			p.next()
		} else if p.peek().kind != close {
			return p.errorf("want , or %s, found %q", closeText, p.peek().text)
		}
	}
	p.next()
	return nil
}

func (p *parser) unary() (value, error) {
	if t := p.peek(); t.kind == tOp && (t.text == "-" || t.text == "+") {
		p.next()
		// Unary minus binds less tightly than ^: -a^b is -(a^b).
		return p.expr(precedence["^"])
	}
	v, err := p.primary()
	if err != nil {
		return value{}, err
	}
	return p.postfix(v)
}

// postfix parses what may follow a selector or subexpression: a range or
// subquery, offset and @.
func (p *parser) postfix(v value) (value, error) {
	for {
		t := p.peek()
		switch {
		case t.kind == tRange:
			p.next()
		case t.kind == tIdent && strings.EqualFold(t.text, "offset"):
			p.next()
			if n := p.peek(); n.kind == tOp && (n.text == "-" || n.text == "+") {
				p.next()
			}
			if n := p.next(); n.kind != tDuration && n.kind != tNumber && n.kind != tVariable {
				return value{}, p.errorf("want a duration after offset, found %q", n.text)
			}
		case t.kind == tOp && t.text == "@":
			p.next()
			n := p.next()
			switch {
			case n.kind == tNumber || n.kind == tVariable:
			case n.kind == tIdent && (n.text == "start" || n.text == "end"):
				if err := p.expect(tLParen, "("); err != nil {
					return value{}, err
				}
				if err := p.expect(tRParen, ")"); err != nil {
					return value{}, err
				}
			default:
				return value{}, p.errorf("want a time after @, found %q", n.text)
			}
		default:
			return v, nil
		}
	}
}

func (p *parser) primary() (value, error) {
	t := p.peek()
	switch t.kind {
	case tNumber, tVariable:
		p.next()
		return value{scalar: true}, nil
	case tString:
		p.next()
		return value{isStr: true, str: t.text}, nil
	case tLParen:
		p.next()
		v, err := p.expr(0)
		if err != nil {
			return value{}, err
		}
		return v, p.expect(tRParen, ")")
	case tLBrace:
		// {__name__="..."}: the metric could be checked only by reading
		// the regular expression, so it is refused.
		return value{}, p.errorf("a selector without a metric name cannot be checked")
	case tIdent:
		name := t.text
		low := strings.ToLower(name)
		if low == "inf" || low == "nan" {
			p.next()
			return value{scalar: true}, nil
		}
		if _, ok := aggregations[low]; ok && p.isAggregation() {
			return p.aggregation()
		}
		if p.toks[p.i+1].kind == tLParen {
			return p.call()
		}
		return p.selector()
	}
	return value{}, p.errorf("unexpected %q", t.text)
}

// isAggregation tells an aggregation (sum(...), sum by (...) (...)) from a
// metric that happens to have the name of one.
func (p *parser) isAggregation() bool {
	n := p.toks[p.i+1]
	return n.kind == tLParen || (n.kind == tIdent && (strings.EqualFold(n.text, "by") || strings.EqualFold(n.text, "without")))
}

// selector parses a metric with its matchers.
func (p *parser) selector() (value, error) {
	name := p.next().text
	labels, known := p.c.Exported[name]
	v := value{labels: map[string]bool{}, from: []string{name}}
	if !known {
		p.problem("metric %s is not exported", name)
		v.labels = nil
	} else {
		for l := range labels {
			v.labels[l] = true
		}
		for _, l := range p.c.Extra {
			v.labels[l] = true
		}
	}
	if p.peek().kind != tLBrace {
		return v, nil
	}
	p.next()
	err := p.commaList(tRBrace, "}", func() error {
		l := p.next()
		if l.kind != tIdent && l.kind != tString {
			return p.errorf("want a label name, found %q", l.text)
		}
		if op := p.next(); op.kind != tOp || (op.text != "=" && op.text != "!=" && op.text != "=~" && op.text != "!~") {
			return p.errorf("want a matcher operator after %s, found %q", l.text, op.text)
		}
		if s := p.next(); s.kind != tString {
			return p.errorf("want a string after %s, found %q", l.text, s.text)
		}
		if l.text != "__name__" && !v.has(l.text) {
			p.problem("%s{%s}: %s has no label %s (it has %s)", name, l.text, name, l.text, v.list())
		}
		return nil
	})
	if err != nil {
		return value{}, err
	}
	return v, nil
}

// args parses a parenthesised argument list.
func (p *parser) args() ([]value, error) {
	if err := p.expect(tLParen, "("); err != nil {
		return nil, err
	}
	var out []value
	err := p.commaList(tRParen, ")", func() error {
		v, err := p.expr(0)
		if err != nil {
			return err
		}
		out = append(out, v)
		return nil
	})
	return out, err
}

// aggregations maps each aggregation operator to the index of its vector
// argument (topk's is its second: topk(5, v)).
var aggregations = map[string]int{
	"sum": 0, "min": 0, "max": 0, "avg": 0, "group": 0, "stddev": 0, "stdvar": 0, "count": 0,
	"count_values": 1, "topk": 1, "bottomk": 1, "quantile": 1, "limitk": 1, "limit_ratio": 1,
}

func (p *parser) aggregation() (value, error) {
	op := strings.ToLower(p.next().text)
	var grouping string
	var labels []string
	readGrouping := func() error {
		if t := p.peek(); t.kind == tIdent && (strings.EqualFold(t.text, "by") || strings.EqualFold(t.text, "without")) {
			p.next()
			grouping = strings.ToLower(t.text)
			var err error
			labels, err = p.labelList()
			return err
		}
		return nil
	}
	if err := readGrouping(); err != nil {
		return value{}, err
	}
	args, err := p.args()
	if err != nil {
		return value{}, err
	}
	if grouping == "" {
		if err := readGrouping(); err != nil {
			return value{}, err
		}
	}
	idx := aggregations[op]
	if len(args) != idx+1 {
		return value{}, p.errorf("%s takes %d argument(s), not %d", op, idx+1, len(args))
	}
	v := args[idx]
	if v.scalar || v.isStr {
		return value{}, p.errorf("%s of a scalar", op)
	}
	for _, l := range labels {
		if !v.has(l) {
			p.problem("%s %s (%s): %s has no label %s (it has %s)", op, grouping, strings.Join(labels, ", "), v.describe(), l, v.list())
		}
	}
	out := value{labels: map[string]bool{}, from: v.from}
	switch {
	case op == "topk" || op == "bottomk" || op == "limitk" || op == "limit_ratio":
		out.labels = v.labels
	case grouping == "by":
		for _, l := range labels {
			out.labels[l] = true
		}
	case grouping == "without":
		if v.labels == nil {
			out.labels = nil
		}
		for l := range v.labels {
			if !slices.Contains(labels, l) {
				out.labels[l] = true
			}
		}
	}
	if op == "count_values" && args[0].isStr && out.labels != nil {
		out.labels[args[0].str] = true
	}
	return out, nil
}

// Functions whose result keeps the labels of their vector argument (the
// first one that is a vector).
var keepLabels = map[string]bool{}

func init() {
	for _, f := range strings.Fields(`abs ceil floor exp ln log2 log10 sqrt round sgn clamp clamp_min clamp_max
		rate irate increase delta idelta deriv resets changes predict_linear holt_winters double_exponential_smoothing
		avg_over_time min_over_time max_over_time sum_over_time count_over_time last_over_time present_over_time
		stddev_over_time stdvar_over_time quantile_over_time mad_over_time timestamp sort sort_desc
		sort_by_label sort_by_label_desc deg rad sin cos tan asin acos atan sinh cosh tanh asinh acosh atanh
		histogram_count histogram_sum histogram_avg histogram_fraction histogram_stddev histogram_stdvar
		day_of_month day_of_week day_of_year days_in_month hour minute month year`) {
		keepLabels[f] = true
	}
}

func (p *parser) call() (value, error) {
	name := p.next().text
	args, err := p.args()
	if err != nil {
		return value{}, err
	}
	vec := -1
	for i, a := range args {
		if !a.scalar && !a.isStr {
			vec = i
			break
		}
	}
	switch {
	case keepLabels[name]:
		if vec < 0 {
			return value{labels: map[string]bool{}}, nil // day_of_week() and the like: vector(time())
		}
		return args[vec], nil
	case name == "histogram_quantile":
		if len(args) != 2 || vec != 1 {
			return value{}, p.errorf("histogram_quantile(φ, buckets) takes a scalar and a vector")
		}
		v := args[1]
		if !v.has("le") {
			p.problem("histogram_quantile: %s has no label le (it has %s): aggregate by le", v.describe(), v.list())
		}
		out := value{labels: map[string]bool{}, from: v.from}
		if v.labels == nil {
			out.labels = nil
		}
		for l := range v.labels {
			if l != "le" {
				out.labels[l] = true
			}
		}
		return out, nil
	case name == "label_replace" || name == "label_join":
		if vec != 0 || len(args) < 3 {
			return value{}, p.errorf("%s takes a vector and strings", name)
		}
		v := args[0]
		src := args[3:]
		if name == "label_replace" && len(args) == 5 {
			src = args[3:4]
		}
		for _, s := range src {
			if s.isStr && s.str != "" && !v.has(s.str) {
				p.problem("%s: %s has no label %s (it has %s)", name, v.describe(), s.str, v.list())
			}
		}
		out := value{labels: maps.Clone(v.labels), from: v.from}
		if out.labels != nil && args[1].isStr {
			out.labels[args[1].str] = true
		}
		return out, nil
	case name == "absent" || name == "absent_over_time" || name == "vector":
		return value{labels: map[string]bool{}}, nil
	case name == "scalar" || name == "time" || name == "pi":
		return value{scalar: true}, nil
	}
	return value{}, p.errorf("unknown function %s", name)
}

// combine applies a binary operator's matching to its operands' labels.
func (p *parser) combine(op string, lhs, rhs value, m match) value {
	if lhs.scalar && rhs.scalar {
		return value{scalar: true}
	}
	if lhs.scalar {
		return rhs
	}
	if rhs.scalar {
		return lhs
	}
	what := fmt.Sprintf("%s %s %s", lhs.describe(), op, rhs.describe())
	for _, l := range m.labels {
		switch {
		case m.on && !lhs.has(l):
			p.problem("%s on (%s): %s has no label %s", what, l, lhs.describe(), l)
		case m.on && !rhs.has(l):
			p.problem("%s on (%s): %s has no label %s", what, l, rhs.describe(), l)
		case m.ignoring && !lhs.has(l) && !rhs.has(l):
			p.problem("%s ignoring (%s): neither side has label %s", what, l, l)
		}
	}
	one, many := rhs, lhs
	if m.group == "group_right" {
		one, many = lhs, rhs
	}
	for _, l := range m.groupLabels {
		if !one.has(l) {
			p.problem("%s %s (%s): %s has no label %s", what, m.group, l, one.describe(), l)
		}
	}
	from := append(slices.Clone(lhs.from), rhs.from...)
	switch op {
	case "and", "unless":
		return value{labels: lhs.labels, from: from}
	case "or":
		if lhs.labels == nil || rhs.labels == nil {
			return value{from: from}
		}
		u := maps.Clone(lhs.labels)
		maps.Copy(u, rhs.labels)
		return value{labels: u, from: from}
	}
	if m.group != "" {
		out := maps.Clone(many.labels)
		for _, l := range m.groupLabels {
			if out != nil {
				out[l] = true
			}
		}
		return value{labels: out, from: from}
	}
	// One-to-one: without on or ignoring, every label must match.
	if !m.hasMatchLabels && lhs.labels != nil && rhs.labels != nil && !maps.Equal(lhs.labels, rhs.labels) {
		p.problem("%s: the sides' labels differ, %s and %s, so no series match: say on (...) or ignoring (...)", what, lhs.list(), rhs.list())
	}
	comparison := precedence[op] == 3
	switch {
	case comparison && !m.boolMod:
		return value{labels: lhs.labels, from: from}
	case m.on:
		out := map[string]bool{}
		for _, l := range m.labels {
			out[l] = true
		}
		return value{labels: out, from: from}
	case m.ignoring && lhs.labels != nil:
		out := maps.Clone(lhs.labels)
		for _, l := range m.labels {
			delete(out, l)
		}
		return value{labels: out, from: from}
	}
	return value{labels: lhs.labels, from: from}
}
