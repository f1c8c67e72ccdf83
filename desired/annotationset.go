package desired

import (
	"cmp"
	"encoding/binary"
	"slices"
	"strings"
)

// Annotations are annotations held in less room than a map: a
// map[string]string is 336 bytes however few entries it has, and an
// object ovn-sync publishes to keeps a handful (seven kube-ovn keys on a
// pod of the default network). They are the keys, sorted, as a list that
// every object keeping the same keys shares (KeyLists), and the values in
// the keys' order in one string, each after its length (a uvarint): 80
// bytes for a pod's seven kube-ovn values, where a slice of them took 112
// and its addresses' strings 40 more. The zero Annotations stand for a
// nil map; an empty map that is not nil has keys and no values.
type Annotations struct {
	keys *[]string
	vals string
}

// Get returns the value of key, if a holds it.
func (a Annotations) Get(key string) (string, bool) {
	if a.keys == nil {
		return "", false
	}
	if i, ok := slices.BinarySearch(*a.keys, key); ok {
		return a.value(i), true
	}
	return "", false
}

// value is the i-th value, of the i-th key: a part of vals, not a copy.
func (a Annotations) value(i int) string {
	rest := a.vals
	for ; i > 0; i-- {
		_, rest = next(rest)
	}
	v, _ := next(rest)
	return v
}

// next splits vals, as Of writes them, into the first value and the rest.
func next(vals string) (v, rest string) {
	n, shift := 0, 0
	for i := 0; i < len(vals); i++ {
		b := vals[i]
		if b < 0x80 {
			n |= int(b) << shift
			return vals[i+1 : i+1+n], vals[i+1+n:]
		}
		n |= int(b&0x7f) << shift
		shift += 7
	}
	return "", ""
}

// each calls f with each key and its value, in the keys' order.
func (a Annotations) each(f func(k, v string)) {
	if a.keys == nil {
		return
	}
	rest := a.vals
	for _, k := range *a.keys {
		var v string
		v, rest = next(rest)
		f(k, v)
	}
}

// Len is how many annotations a holds.
func (a Annotations) Len() int {
	if a.keys == nil {
		return 0
	}
	return len(*a.keys)
}

// Map returns the annotations as a map: a new one at each call, nil for
// the zero Annotations.
func (a Annotations) Map() map[string]string {
	return a.MapInto(nil)
}

// MapInto is Map made in m, cleared first, rather than in a new map: m
// itself unless a is the zero Annotations (nil) or m is nil (a new map).
func (a Annotations) MapInto(m map[string]string) map[string]string {
	if a.keys == nil {
		return nil
	}
	if m == nil {
		m = make(map[string]string, a.Len())
	}
	clear(m)
	a.each(func(k, v string) { m[k] = v })
	return m
}

// KeyLists hand out Annotations whose lists of keys are shared: the
// objects of a cluster keep a few sets of keys (a network's annotations,
// with or without a Multus network's). Every list is forgotten once they
// hold Max, so that keys which are not alike cannot make them grow: a list
// is then held again, not lost. They are not safe for concurrent use; the
// zero KeyLists hold at most 1,024, and nil KeyLists share no list.
type KeyLists struct {
	// Max bounds the lists held (0: 1,024).
	Max int
	// Key, when set, is what a list holds of each key, an equal string:
	// the one copy of it that every object shares, say.
	Key func(string) string

	lists map[string]*[]string // by the keys joined with NULs
}

// Of returns the annotations of m whose key keep accepts (every key when
// keep is nil), their values copied into one string. A nil m, or one of which
// no key is kept, gives the zero Annotations; an empty m that is not nil
// gives empty ones.
func (kl *KeyLists) Of(m map[string]string, keep func(string) bool) Annotations {
	if m == nil {
		return Annotations{}
	}
	var buf [16]string
	keys := buf[:0]
	for k := range m {
		if keep == nil || keep(k) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 && len(m) > 0 {
		return Annotations{}
	}
	slices.Sort(keys)
	var length [binary.MaxVarintLen64]byte
	n := 0
	for _, k := range keys {
		n += len(binary.AppendUvarint(length[:0], uint64(len(m[k])))) + len(m[k])
	}
	var vals strings.Builder
	vals.Grow(n)
	for _, k := range keys {
		v := m[k]
		vals.Write(binary.AppendUvarint(length[:0], uint64(len(v))))
		vals.WriteString(v)
	}
	return Annotations{keys: kl.list(keys), vals: vals.String()}
}

// list returns the shared list of keys, which are sorted: a copy of them
// when none was handed out before, or kl is nil.
func (kl *KeyLists) list(keys []string) *[]string {
	if kl == nil {
		l := slices.Clone(keys)
		return &l
	}
	var buf [512]byte
	id := buf[:0]
	for _, k := range keys {
		id = append(append(id, k...), 0)
	}
	if l, ok := kl.lists[string(id)]; ok {
		return l
	}
	if kl.lists == nil || len(kl.lists) >= cmp.Or(kl.Max, 1<<10) {
		kl.lists = map[string]*[]string{}
	}
	l := slices.Clone(keys)
	if kl.Key != nil {
		for i, k := range l {
			l[i] = kl.Key(k)
		}
	}
	kl.lists[string(id)] = &l
	return &l
}

// Len returns how many lists kl holds.
func (kl *KeyLists) Len() int {
	return len(kl.lists)
}
