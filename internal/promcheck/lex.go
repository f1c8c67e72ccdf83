package promcheck

import (
	"fmt"
	"strings"
)

// tokKind is a kind of PromQL token.
type tokKind int

const (
	tEOF      tokKind = iota
	tIdent            // a metric, label, function, aggregation or keyword
	tNumber           // 1, 0.5, 1e3, Inf
	tDuration         // 5m, 1h30m (after offset)
	tString           // "..." '...' `...`, unquoted in text
	tRange            // [5m], [$__rate_interval], [1h:5m]: a range or subquery
	tVariable         // $var, ${var}: a dashboard variable where a number would be
	tLParen
	tRParen
	tLBrace
	tRBrace
	tComma
	tOp // + - * / % ^ == != < <= > >= = =~ !~ @
)

// punctuation is the kind of each one-character token.
var punctuation = map[byte]tokKind{'(': tLParen, ')': tRParen, '{': tLBrace, '}': tRBrace, ',': tComma}

type token struct {
	kind tokKind
	text string
	pos  int
}

// lex splits expr into tokens.
func lex(expr string) ([]token, error) {
	var out []token
	i := 0
	for i < len(expr) {
		c := expr[i]
		start := i
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
			continue
		case c == '#': // a comment runs to the end of the line
			for i < len(expr) && expr[i] != '\n' {
				i++
			}
			continue
		case isIdentStart(c):
			for i < len(expr) && isIdentChar(expr[i]) {
				i++
			}
			out = append(out, token{tIdent, expr[start:i], start})
		case isDigit(c) || (c == '.' && i+1 < len(expr) && isDigit(expr[i+1])):
			if strings.HasPrefix(expr[i:], "0x") || strings.HasPrefix(expr[i:], "0X") {
				i += 2
				for i < len(expr) && (isDigit(expr[i]) || isHex(expr[i])) {
					i++
				}
			} else {
				for i < len(expr) && (isDigit(expr[i]) || expr[i] == '.') {
					i++
				}
				if j := i + 1; i < len(expr) && (expr[i] == 'e' || expr[i] == 'E') {
					if j < len(expr) && (expr[j] == '+' || expr[j] == '-') {
						j++
					}
					if j < len(expr) && isDigit(expr[j]) {
						for i = j; i < len(expr) && isDigit(expr[i]); i++ {
						}
					}
				}
			}
			kind := tNumber
			if i < len(expr) && strings.ContainsRune("smhdwy", rune(expr[i])) {
				for i < len(expr) && (isDigit(expr[i]) || strings.ContainsRune("smhdwy", rune(expr[i]))) {
					i++
				}
				kind = tDuration
			}
			out = append(out, token{kind, expr[start:i], start})
		case c == '"' || c == '\'' || c == '`':
			var b strings.Builder
			i++
			for ; i < len(expr) && expr[i] != c; i++ {
				if expr[i] == '\\' && c != '`' && i+1 < len(expr) {
					i++
				}
				b.WriteByte(expr[i])
			}
			if i == len(expr) {
				return nil, fmt.Errorf("at %d: unterminated string", start)
			}
			i++
			out = append(out, token{tString, b.String(), start})
		case c == '[':
			end := strings.IndexByte(expr[i:], ']')
			if end < 0 {
				return nil, fmt.Errorf("at %d: unterminated [", start)
			}
			i += end + 1
			out = append(out, token{tRange, expr[start:i], start})
		case c == '$':
			i++
			if i < len(expr) && expr[i] == '{' {
				end := strings.IndexByte(expr[i:], '}')
				if end < 0 {
					return nil, fmt.Errorf("at %d: unterminated ${", start)
				}
				i += end + 1
			} else {
				for i < len(expr) && isIdentChar(expr[i]) {
					i++
				}
			}
			out = append(out, token{tVariable, expr[start:i], start})
		case punctuation[c] != 0:
			i++
			out = append(out, token{punctuation[c], string(c), start})
		default:
			op := ""
			for _, o := range []string{"==", "!=", "<=", ">=", "=~", "!~", "+", "-", "*", "/", "%", "^", "<", ">", "=", "@"} {
				if strings.HasPrefix(expr[i:], o) {
					op = o
					break
				}
			}
			if op == "" {
				return nil, fmt.Errorf("at %d: unexpected %q", start, c)
			}
			i += len(op)
			out = append(out, token{tOp, op, start})
		}
	}
	return append(out, token{tEOF, "", len(expr)}), nil
}

func isIdentStart(c byte) bool {
	return c == '_' || c == ':' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdentChar(c byte) bool { return isIdentStart(c) || isDigit(c) }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isHex(c byte) bool { return (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') }
