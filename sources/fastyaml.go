package sources

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// simpleYAML converts one YAML document to the JSON that
// sigs.k8s.io/yaml (go-yaml v2, then encoding/json: keys sorted, compact)
// makes of it, byte for byte, when the document keeps to the plain subset
// that kubectl and most hands write: block mappings and sequences indented
// with spaces, keys that are identifiers, and scalars that are quoted on
// one line, plain strings, decimal integers, true, false, null, {} or [].
// Anything else — flow collections, block scalars, anchors, tags, floats,
// YAML 1.1's other booleans, a duplicate key, a tab, a non-ASCII byte — and
// it returns ok == false, and the document must go the general way, which
// also gives the general way's errors. It is five to six times faster on a
// kubectl-style pod (BenchmarkYAMLToJSON). It also returns the document's
// apiVersion and kind when json.Unmarshal
// would read them from the JSON into a metav1.TypeMeta without error (tm
// is nil when it must be asked).
func simpleYAML(doc []byte) (out []byte, tm *metav1.TypeMeta, ok bool) {
	v, ok := parseSimpleYAML(doc)
	if !ok {
		return nil, nil, false
	}
	if v == nil {
		return []byte("null"), nil, true
	}
	buf := make([]byte, 0, len(doc))
	return v.appendJSON(buf), v.typeMeta(), true
}

// parseSimpleYAML parses one document of simpleYAML's plain subset into its
// tree: nil for an empty document; ok is false outside the subset.
func parseSimpleYAML(doc []byte) (v *yamlValue, ok bool) {
	var p yamlLines
	return p.parse(doc)
}

// parse is parseSimpleYAML reusing p's room: the tree it returns is good
// until p parses again.
func (p *yamlLines) parse(doc []byte) (v *yamlValue, ok bool) {
	p.i, p.keptKeys, p.keptItems = 0, p.keptKeys[:0], p.keptItems[:0]
	if !p.split(doc) {
		return nil, false
	}
	if len(p.lines) == 0 {
		return nil, true
	}
	if p.lines[0].indent != 0 {
		return nil, false
	}
	root, ok := p.node(0)
	if !ok || p.i != len(p.lines) {
		return nil, false
	}
	return &root, true
}

// typeMeta returns the apiVersion and kind of a mapping, as json.Unmarshal
// reads them into a metav1.TypeMeta: each a string, or null or absent for
// "". It returns nil for anything json.Unmarshal might read otherwise or
// refuse: not a mapping, a value of another type, or a key that matches
// one of the two only as encoding/json matches, ignoring case.
func (v yamlValue) typeMeta() *metav1.TypeMeta {
	if v.kind != 'm' {
		return nil
	}
	var tm metav1.TypeMeta
	for _, e := range v.keys {
		var dst *string
		switch {
		case e.key == "apiVersion":
			dst = &tm.APIVersion
		case e.key == "kind":
			dst = &tm.Kind
		case strings.EqualFold(e.key, "apiVersion") || strings.EqualFold(e.key, "kind"):
			return nil
		default:
			continue
		}
		switch {
		case e.val.kind == 't':
			*dst = e.val.raw
		case e.val.kind != 's' || e.val.raw != "null":
			return nil
		}
	}
	return &tm
}

// yamlLine is one line of a document that holds something: its indent and
// the text after it.
type yamlLine struct {
	indent int
	text   string
}

type yamlLines struct {
	// text is the document parsed: the tree's strings are parts of it (but
	// a single-quoted scalar holding a quote, made anew).
	text  string
	lines []yamlLine
	i     int
	// keys and items are stacks the mapping and sequence being parsed
	// collect their entries on (a nested one collects above its parent's
	// and is done before the parent adds its next); each then keeps a copy
	// of its entries, of the size it needs (keep).
	keys  []yamlEntry
	items []yamlValue
	// keptKeys and keptItems are where those copies are made: one block
	// of room that the next document parsed reuses, instead of an
	// allocation for each mapping and sequence.
	keptKeys  []yamlEntry
	keptItems []yamlValue
}

// keep copies s into the room left in *kept, making new room when too
// little is left, and returns the copy.
func keep[T any](kept *[]T, s []T) []T {
	if len(s) == 0 {
		return nil
	}
	if cap(*kept)-len(*kept) < len(s) {
		*kept = make([]T, 0, max(2*cap(*kept), len(s), 64))
	}
	n := len(*kept)
	*kept = append(*kept, s...)
	return (*kept)[n:len(*kept):len(*kept)]
}

// split keeps the lines that hold something, dropping blank lines and
// whole-line comments.
func (p *yamlLines) split(doc []byte) bool {
	for _, c := range doc {
		// Tabs, carriage returns, other control characters and anything
		// beyond ASCII are left to the general way.
		if c >= 0x7f || (c < 0x20 && c != '\n') {
			return false
		}
	}
	s := string(doc)
	p.text, p.lines = s, p.lines[:0]
	for len(s) > 0 {
		line, rest, _ := strings.Cut(s, "\n")
		s = rest
		text := strings.TrimLeft(line, " ")
		if text == "" || text[0] == '#' {
			continue
		}
		if strings.HasPrefix(line, "%") || strings.HasPrefix(line, "---") || strings.HasPrefix(line, "...") {
			return false
		}
		p.lines = append(p.lines, yamlLine{indent: len(line) - len(text), text: strings.TrimRight(text, " ")})
	}
	return true
}

// yamlValue is a parsed node: a scalar already in JSON (raw), a string
// (raw, written as JSON when the value is), a mapping (keys) or a sequence
// (items).
type yamlValue struct {
	kind  byte // 's' JSON scalar, 't' string, 'm' mapping, 'q' sequence
	raw   string
	keys  []yamlEntry
	items []yamlValue
}

type yamlEntry struct {
	key string
	val yamlValue
}

func (v yamlValue) appendJSON(b []byte) []byte {
	switch v.kind {
	case 'm':
		b = append(b, '{')
		for i, e := range v.keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, e.key)
			b = append(b, ':')
			b = e.val.appendJSON(b)
		}
		return append(b, '}')
	case 'q':
		b = append(b, '[')
		for i, e := range v.items {
			if i > 0 {
				b = append(b, ',')
			}
			b = e.appendJSON(b)
		}
		return append(b, ']')
	case 't':
		return appendJSONString(b, v.raw)
	}
	return append(b, v.raw...)
}

// node parses the block starting at the current line, whose indent is at
// least min.
func (p *yamlLines) node(min int) (yamlValue, bool) {
	l := p.lines[p.i]
	if l.indent < min {
		return yamlValue{}, false
	}
	if isSeqItem(l.text) {
		return p.sequence(l.indent)
	}
	return p.mapping(l.indent)
}

func isSeqItem(text string) bool {
	return text == "-" || strings.HasPrefix(text, "- ")
}

func (p *yamlLines) sequence(indent int) (yamlValue, bool) {
	v := yamlValue{kind: 'q'}
	base := len(p.items)
	defer func() { p.items = p.items[:base] }()
	for p.i < len(p.lines) {
		l := p.lines[p.i]
		if l.indent < indent || (l.indent == indent && !isSeqItem(l.text)) {
			// The end of the sequence; a key at its indent is the next
			// of the mapping it is the value of (a sequence may sit at
			// its key's indent), and anything else the caller refuses.
			break
		}
		if l.indent > indent {
			return v, false
		}
		rest := strings.TrimLeft(l.text[1:], " ")
		if rest == "" {
			p.i++
			item, ok := p.nested(indent + 1)
			if !ok {
				return v, false
			}
			p.items = append(p.items, item)
			continue
		}
		col := indent + len(l.text) - len(rest)
		if isSeqItem(rest) || hasKey(rest) {
			// "- key: value" or "- - x": a block that starts on this
			// line, at the column of its first character.
			p.lines[p.i] = yamlLine{indent: col, text: rest}
			item, ok := p.node(col)
			if !ok {
				return v, false
			}
			p.items = append(p.items, item)
			continue
		}
		item, ok := scalar(rest)
		if !ok {
			return v, false
		}
		p.i++
		if p.i < len(p.lines) && p.lines[p.i].indent > indent {
			return v, false // a scalar continued on the next line
		}
		p.items = append(p.items, item)
	}
	v.items = keep(&p.keptItems, p.items[base:])
	return v, true
}

// nested is the value of a key or item whose line ends after it: the block
// on the following lines indented beyond parent, or null.
func (p *yamlLines) nested(parent int) (yamlValue, bool) {
	if p.i < len(p.lines) && p.lines[p.i].indent >= parent {
		return p.node(parent)
	}
	return yamlValue{kind: 's', raw: "null"}, true
}

func (p *yamlLines) mapping(indent int) (yamlValue, bool) {
	v := yamlValue{kind: 'm'}
	base := len(p.keys)
	defer func() { p.keys = p.keys[:base] }()
	for p.i < len(p.lines) {
		l := p.lines[p.i]
		if l.indent < indent {
			break
		}
		if l.indent > indent || isSeqItem(l.text) {
			return v, false
		}
		key, rest, ok := splitKey(l.text)
		if !ok {
			return v, false
		}
		p.i++
		var val yamlValue
		switch {
		case rest != "":
			if val, ok = scalar(rest); !ok {
				return v, false
			}
			if p.i < len(p.lines) && p.lines[p.i].indent > indent {
				return v, false
			}
		case p.i < len(p.lines) && p.lines[p.i].indent == indent && isSeqItem(p.lines[p.i].text):
			// A sequence may sit at its key's own indent.
			if val, ok = p.sequence(indent); !ok {
				return v, false
			}
		default:
			if val, ok = p.nested(indent + 1); !ok {
				return v, false
			}
		}
		p.keys = append(p.keys, yamlEntry{key: key, val: val})
	}
	v.keys = keep(&p.keptKeys, p.keys[base:])
	// encoding/json writes a map's keys sorted; a key given twice is left
	// to the general way.
	slices.SortFunc(v.keys, func(a, b yamlEntry) int { return strings.Compare(a.key, b.key) })
	for i := 1; i < len(v.keys); i++ {
		if v.keys[i].key == v.keys[i-1].key {
			return v, false
		}
	}
	return v, true
}

// hasKey reports whether text starts with a key and its colon.
func hasKey(text string) bool {
	_, _, ok := splitKey(text)
	return ok
}

// splitKey splits "key: rest" or "key:" into the key and rest. A key is an identifier (letters, digits, '_', '-', '.', '/'
// starting with a letter or '_') that go-yaml v2 reads as a string, or a
// quoted string.
func splitKey(text string) (key, rest string, ok bool) {
	var raw string
	var n int
	switch text[0] {
	case '\'', '"':
		end := quotedEnd(text)
		if end < 0 {
			return "", "", false
		}
		raw, n = unquote(text[:end]), end
	default:
		for n < len(text) && isKeyByte(text[n], n == 0) {
			n++
		}
		if n == 0 || specialPlain(text[:n]) {
			return "", "", false
		}
		raw = text[:n]
	}
	if n == len(text) || text[n] != ':' {
		return "", "", false
	}
	if n > maxSimpleKey {
		return "", "", false // go-yaml refuses it
	}
	if n+1 == len(text) {
		return raw, "", true
	}
	if text[n+1] != ' ' {
		return "", "", false
	}
	return raw, strings.TrimLeft(text[n+1:], " "), true
}

// maxSimpleKey is the longest key go-yaml v2 reads without a "? "
// before it: it drops a possible key once the scanner is more than 1024
// characters past its start.
const maxSimpleKey = 1024

func isKeyByte(c byte, first bool) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_':
		return true
	case c >= '0' && c <= '9', c == '-', c == '.', c == '/':
		return !first
	}
	return false
}

// quotedEnd returns the index just past the quoted scalar text starts
// with, or -1 when it does not end on this line.
func quotedEnd(text string) int {
	q := text[0]
	for i := 1; i < len(text); i++ {
		switch {
		case text[i] == '\\' && q == '"':
			return -1 // escapes are left to the general way
		case text[i] == q && q == '\'' && i+1 < len(text) && text[i+1] == '\'':
			i++ // '' is a quote inside single quotes
		case text[i] == q:
			return i + 1
		}
	}
	return -1
}

// unquote returns the string a whole quoted scalar (without escapes) holds.
func unquote(text string) string {
	s := text[1 : len(text)-1]
	if text[0] == '\'' {
		s = strings.ReplaceAll(s, "''", "'")
	}
	return s
}

// scalar converts a value written on its key's or item's line.
func scalar(text string) (yamlValue, bool) {
	switch text {
	case "{}":
		return yamlValue{kind: 'm'}, true
	case "[]":
		return yamlValue{kind: 'q'}, true
	case "null", "~":
		return yamlValue{kind: 's', raw: "null"}, true
	case "true", "false":
		return yamlValue{kind: 's', raw: text}, true
	}
	switch text[0] {
	case '\'', '"':
		end := quotedEnd(text)
		if end != len(text) {
			return yamlValue{}, false // a comment or more after the quote
		}
		return yamlValue{kind: 't', raw: unquote(text)}, true
	}
	if isInt(text) {
		return yamlValue{kind: 's', raw: text}, true
	}
	if !plainString(text) {
		return yamlValue{}, false
	}
	return yamlValue{kind: 't', raw: text}, true
}

// isInt reports whether text is a decimal integer that go-yaml v2 reads as
// an int and encoding/json writes back as the same text.
func isInt(text string) bool {
	digits := strings.TrimPrefix(text, "-")
	if digits == "" || len(digits) > 18 || (digits[0] == '0' && (len(digits) > 1 || len(text) > 1)) {
		return false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return false
		}
	}
	return true
}

// plainString reports whether go-yaml v2 reads the plain scalar text, in
// block context, as the string text itself.
func plainString(text string) bool {
	if specialPlain(text) || strings.ContainsAny(text[:1], "-?:,[]{}#&*!|>'\"%@`<=") {
		return false
	}
	if strings.Contains(text, ": ") || strings.Contains(text, " #") || strings.HasSuffix(text, ":") ||
		strings.ContainsAny(text, "[]{}") {
		return false
	}
	switch c := text[0]; {
	case c == '+' || c == '.' || (c >= '0' && c <= '9'):
		// go-yaml tries these as numbers and timestamps: only what can be
		// neither is a string here.
		if strings.Contains(text, ":") || looksLikeDate(text) {
			return false
		}
		if strings.IndexFunc(text, notInNumber) >= 0 || strings.Count(text, ".") > 1 {
			// 100m, 128Mi, 10.16.0.5: strconv refuses them all as
			// syntax (no number has two points), and refusing costs
			// three errors made.
			return true
		}
		s := strings.ReplaceAll(text, "_", "")
		if _, err := strconv.ParseInt(s, 0, 64); err == nil {
			return false
		}
		if _, err := strconv.ParseUint(s, 0, 64); err == nil {
			return false
		}
		if _, err := strconv.ParseFloat(s, 64); err == nil || !isSyntaxErr(err) {
			return false
		}
	}
	return true
}

// notInNumber reports whether r is in no text strconv.ParseInt,
// ParseUint or ParseFloat can read: digits of any base with their
// prefixes, signs, points, underscores, exponents, and the letters of
// "infinity" and "nan".
func notInNumber(r rune) bool {
	return !strings.ContainsRune("0123456789abcdefABCDEFxXoObBpP+-._iInNtTyY", r)
}

func isSyntaxErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrSyntax
}

// looksLikeDate reports whether text starts like a YAML timestamp, four
// digits and a dash.
func looksLikeDate(text string) bool {
	if len(text) < 5 || text[4] != '-' {
		return false
	}
	for i := range 4 {
		if text[i] < '0' || text[i] > '9' {
			return false
		}
	}
	return true
}

// specialPlain reports whether go-yaml v2 gives the plain scalar text a
// meaning other than a string: YAML 1.1's booleans, nulls, infinities,
// NaN and the merge key.
func specialPlain(text string) bool {
	switch text {
	case "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON",
		"n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF",
		"~", "null", "Null", "NULL",
		".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF", "<<":
		return true
	}
	return false
}

// appendJSONString appends s as encoding/json writes it.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
