// Package intern hands out one copy of each string that many objects hold
// alike: a decoder gives every string memory of its own, and a value a
// hundred thousand objects share (a switch's name, an annotation's key)
// is then held a hundred thousand times.
package intern

import "sync"

// Strings hands out one copy of each string it is given. It forgets every
// string once it holds its bound, so that strings which are not alike
// cannot make it grow: they are held again, not lost. It is safe for
// concurrent use.
type Strings struct {
	mu  sync.Mutex
	m   map[string]string
	max int
}

// New returns Strings that hold at most max strings.
func New(max int) *Strings { return &Strings{max: max} }

// Get returns s, or the copy of it handed out before.
func (in *Strings) Get(s string) string {
	if s == "" {
		return ""
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if c, ok := in.m[s]; ok {
		return c
	}
	if in.m == nil || len(in.m) >= in.max {
		in.m = make(map[string]string)
	}
	in.m[s] = s
	return s
}

// Len returns how many strings in holds.
func (in *Strings) Len() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return len(in.m)
}
