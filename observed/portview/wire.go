package portview

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf16"
	"unicode/utf8"
)

// jsonReader reads the JSON values of a stream, such as the messages of
// an OVSDB connection, straight from a buffer it refills: a monitor's
// first reply holds every row of a table (some 40 MB at 100k ports), and
// reading it this way never holds it whole, nor builds a generic value of
// it. Its methods read one value each; strings come back in a scratch
// buffer valid until the next string read.
type jsonReader struct {
	r    io.Reader
	buf  []byte
	i, n int
	err  error
	// str and key are scratch for string values and object keys.
	str, key []byte
	// rec, while set, receives every byte consumed (raw values).
	rec     *[]byte
	recFrom int
}

func newJSONReader(r io.Reader) *jsonReader {
	return &jsonReader{r: r, buf: make([]byte, 64<<10)}
}

// errSyntax is a malformed stream: the connection is not read further.
var errSyntax = errors.New("malformed JSON")

// fill makes at least one unread byte available, or returns false with
// r.err set.
func (r *jsonReader) fill() bool {
	if r.i < r.n {
		return true
	}
	if r.err != nil {
		return false
	}
	if r.rec != nil {
		*r.rec = append(*r.rec, r.buf[r.recFrom:r.n]...)
		r.recFrom = 0
	}
	r.i, r.n = 0, 0
	for r.n == 0 {
		n, err := r.r.Read(r.buf)
		r.n = n
		if err != nil && n == 0 {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			r.err = err
			return false
		}
	}
	return true
}

// fail records err, unless an error is recorded already, and returns it.
func (r *jsonReader) fail(err error) error {
	if r.err == nil {
		r.err = err
	}
	return r.err
}

// peek returns the next byte that is not white space, unread.
func (r *jsonReader) peek() (byte, error) {
	for {
		if !r.fill() {
			return 0, r.err
		}
		switch c := r.buf[r.i]; c {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return c, nil
		}
	}
}

// expect consumes c, the next byte that is not white space.
func (r *jsonReader) expect(c byte) error {
	got, err := r.peek()
	if err != nil {
		return err
	}
	if got != c {
		return r.fail(fmt.Errorf("%w: %q where %q was expected", errSyntax, got, c))
	}
	r.i++
	return nil
}

// null consumes a null and reports whether the next value was one.
func (r *jsonReader) null() (bool, error) {
	c, err := r.peek()
	if err != nil || c != 'n' {
		return false, err
	}
	return true, r.literal("null")
}

func (r *jsonReader) literal(lit string) error {
	for k := 0; k < len(lit); k++ {
		if !r.fill() {
			return r.err
		}
		if r.buf[r.i] != lit[k] {
			return r.fail(fmt.Errorf("%w: bad literal", errSyntax))
		}
		r.i++
	}
	return nil
}

// readString reads a string value into r.str and returns it: the bytes
// are valid until the next string value is read.
func (r *jsonReader) readString() ([]byte, error) {
	s, err := r.appendString(r.str[:0])
	r.str = s
	return s, err
}

// readKey is readString into the scratch of object keys.
func (r *jsonReader) readKey() ([]byte, error) {
	s, err := r.appendString(r.key[:0])
	r.key = s
	return s, err
}

// appendString reads a string value and appends its contents to dst.
func (r *jsonReader) appendString(dst []byte) ([]byte, error) {
	if err := r.expect('"'); err != nil {
		return dst, err
	}
	for {
		if !r.fill() {
			return dst, r.err
		}
		// The run of plain bytes up to a quote or an escape, at once.
		j := r.i
		for j < r.n && r.buf[j] != '"' && r.buf[j] != '\\' {
			j++
		}
		dst = append(dst, r.buf[r.i:j]...)
		r.i = j
		if j == r.n {
			continue
		}
		r.i++
		if r.buf[j] == '"' {
			return dst, nil
		}
		if !r.fill() {
			return dst, r.err
		}
		e := r.buf[r.i]
		r.i++
		switch e {
		case '"', '\\', '/':
			dst = append(dst, e)
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			c, err := r.hex4()
			if err != nil {
				return dst, err
			}
			if utf16.IsSurrogate(c) {
				// A pair is two escapes; a lone half is U+FFFD, as
				// encoding/json reads it.
				if r.fill() && r.buf[r.i] == '\\' {
					save := r.i
					r.i++
					if r.fill() && r.buf[r.i] == 'u' {
						r.i++
						c2, err := r.hex4()
						if err != nil {
							return dst, err
						}
						if d := utf16.DecodeRune(c, c2); d != utf8.RuneError {
							dst = utf8.AppendRune(dst, d)
							continue
						}
						dst = utf8.AppendRune(dst, utf8.RuneError)
						c = c2
						if utf16.IsSurrogate(c) {
							c = utf8.RuneError
						}
						dst = utf8.AppendRune(dst, c)
						continue
					}
					r.i = save
				}
				c = utf8.RuneError
			}
			dst = utf8.AppendRune(dst, c)
		default:
			return dst, r.fail(fmt.Errorf("%w: bad escape %q", errSyntax, e))
		}
	}
}

func (r *jsonReader) hex4() (rune, error) {
	var c rune
	for range 4 {
		if !r.fill() {
			return 0, r.err
		}
		b := r.buf[r.i]
		r.i++
		switch {
		case '0' <= b && b <= '9':
			c = c<<4 | rune(b-'0')
		case 'a' <= b && b <= 'f':
			c = c<<4 | rune(b-'a'+10)
		case 'A' <= b && b <= 'F':
			c = c<<4 | rune(b-'A'+10)
		default:
			return 0, r.fail(fmt.Errorf("%w: bad \\u escape", errSyntax))
		}
	}
	return c, nil
}

// object reads an object, calling member for each key with the reader
// at its value, which member must read. The key is valid until member
// reads a string.
func (r *jsonReader) object(member func(key []byte) error) error {
	return r.sequence('{', '}', "an object", func(int) error {
		key, err := r.readKey()
		if err != nil {
			return err
		}
		if err := r.expect(':'); err != nil {
			return err
		}
		return member(key)
	})
}

// array reads an array, calling elem with the reader at each element,
// which elem must read.
func (r *jsonReader) array(elem func(i int) error) error {
	return r.sequence('[', ']', "an array", elem)
}

// sequence reads open, then items separated by commas up to close, each
// read by item (what names the container in errors).
func (r *jsonReader) sequence(open, close byte, what string, item func(i int) error) error {
	if err := r.expect(open); err != nil {
		return err
	}
	c, err := r.peek()
	if err != nil {
		return err
	}
	if c == close {
		r.i++
		return nil
	}
	for i := 0; ; i++ {
		if err := item(i); err != nil {
			return err
		}
		c, err := r.peek()
		if err != nil {
			return err
		}
		r.i++
		switch c {
		case ',':
		case close:
			return nil
		default:
			return r.fail(fmt.Errorf("%w: %q in %s", errSyntax, c, what))
		}
	}
}

// tagged reads an OVSDB value written as a pair, [tag, value] ("set",
// "map", "uuid"), calling value with the tag and the reader at the value,
// which value must read.
func (r *jsonReader) tagged(value func(tag string) error) error {
	var tag string
	return r.array(func(i int) error {
		if i == 0 {
			s, err := r.readString()
			tag = string(s)
			return err
		}
		if i == 1 {
			return value(tag)
		}
		return r.fail(fmt.Errorf("%w: a %q value of more than two elements", errSyntax, tag))
	})
}

// skip reads a value of any kind and drops it.
func (r *jsonReader) skip() error {
	c, err := r.peek()
	if err != nil {
		return err
	}
	switch c {
	case '{':
		return r.object(func([]byte) error { return r.skip() })
	case '[':
		return r.array(func(int) error { return r.skip() })
	case '"':
		// A string is scanned for its end, not decoded.
		r.i++
		for {
			if !r.fill() {
				return r.err
			}
			b := r.buf[r.i]
			r.i++
			switch b {
			case '"':
				return nil
			case '\\':
				if !r.fill() {
					return r.err
				}
				r.i++
			}
		}
	default:
		// A number, true, false or null: up to the next delimiter.
		start := true
		for {
			if !r.fill() {
				if start {
					return r.err
				}
				return nil
			}
			switch r.buf[r.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				if start {
					return r.fail(fmt.Errorf("%w: %q", errSyntax, r.buf[r.i]))
				}
				return nil
			}
			r.i++
			start = false
		}
	}
}

// raw reads a value and returns its bytes, for the small values decoded
// with encoding/json (ids, errors, an echo's parameters).
func (r *jsonReader) raw() (json.RawMessage, error) {
	if _, err := r.peek(); err != nil {
		return nil, err
	}
	var out []byte
	r.rec, r.recFrom = &out, r.i
	err := r.skip()
	if r.rec != nil && err == nil {
		out = append(out, r.buf[r.recFrom:r.i]...)
	}
	r.rec = nil
	return out, err
}
