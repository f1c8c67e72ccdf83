package state

import (
	"cmp"
	"hash/maphash"
	"slices"
)

// Entry is one port in an Index: the port, a hash of its name, and a
// fingerprint of every column and key ovn-sync manages.
type Entry struct {
	NameHash uint64
	Sum      uint64
	Owned    bool
	// Dynamic is set when the port has dynamic_addresses (which Sum does
	// not cover: ovn-northd writes them).
	Dynamic bool
	Port    *Port
}

// Entries are index entries sorted by NameHash, packed, so that a walk
// over two of them in step reads memory in order: that is what lets
// diff.Compute pass over a million unchanged ports without a map lookup or
// a pointer dereference each.
type Entries []Entry

// Index lists a State's ports sorted by NameHash, split by the hash's top
// byte into shards as Ports are: shard i of two indexes covers the same
// hashes, so walking two indexes in step is walking each pair of shards in
// step. A Patch copies only the shards it changes, so a snapshot that
// differs from the last in a few ports costs those shards, not the whole
// index. The zero Index is empty (and, in a State, "not built").
type Index struct {
	shards *[nShards]indexShard
	n      int
}

// indexShard is one shard of an Index, with a fingerprint of its entries.
type indexShard struct {
	es Entries
	// sum is the XOR of the entries' Sums: two shards with the same sum
	// and length hold the same ports but for a 2^-64 chance, as with Sum.
	sum uint64
	// plain is set when every entry is Owned and not Dynamic.
	plain bool
	// owned counts the entries that are Owned.
	owned int
}

func indexShardOf(es Entries) indexShard {
	s := indexShard{es: es, plain: true}
	for i := range es {
		s.sum ^= es[i].Sum
		s.plain = s.plain && es[i].Owned && !es[i].Dynamic
		if es[i].Owned {
			s.owned++
		}
	}
	return s
}

// NumShards is the number of shards of an Index.
const NumShards = nShards

// IndexOf returns the Index of entries, which must be sorted (Sort). The
// shards share entries' memory.
func IndexOf(entries Entries) Index {
	idx := Index{shards: new([nShards]indexShard), n: len(entries)}
	i := 0
	for sh := range nShards {
		j := i
		for j < len(entries) && int(entries[j].NameHash>>(64-shardBits)) == sh {
			j++
		}
		idx.shards[sh] = indexShardOf(entries[i:j:j])
		i = j
	}
	return idx
}

// Len returns the number of entries.
func (idx Index) Len() int { return idx.n }

// Built reports whether idx was made (by IndexOf, IndexPorts or Patch),
// as opposed to the zero Index.
func (idx Index) Built() bool { return idx.shards != nil }

// Shard returns the entries of shard i, sorted.
func (idx Index) Shard(i int) Entries {
	if idx.shards == nil {
		return nil
	}
	return idx.shards[i].es
}

// Owned counts the entries that are Owned, without reading them.
func (idx Index) Owned() int {
	n := 0
	if idx.shards != nil {
		for i := range idx.shards {
			n += idx.shards[i].owned
		}
	}
	return n
}

// SameShard reports whether shard i of idx and of o hold the same ports,
// but for a 2^-64 chance (see Port.Sum), without reading them; and
// whether every entry of idx's shard is Owned and not Dynamic (Sum does
// not cover Dynamic: o's entries may differ in it).
func (idx Index) SameShard(o Index, i int) (same, plain bool) {
	if idx.shards == nil || o.shards == nil {
		return len(idx.Shard(i)) == 0 && len(o.Shard(i)) == 0, true
	}
	a, b := &idx.shards[i], &o.shards[i]
	return len(a.es) == len(b.es) && a.sum == b.sum, a.plain
}

// Entries returns every entry, sorted, in a slice of its own.
func (idx Index) Entries() Entries {
	out := make(Entries, 0, idx.n)
	for sh := range nShards {
		out = append(out, idx.Shard(sh)...)
	}
	return out
}

// Equal reports whether idx and o hold the same entries.
func (idx Index) Equal(o Index) bool {
	if idx.n != o.n {
		return false
	}
	for sh := range nShards {
		if !slices.Equal(idx.Shard(sh), o.Shard(sh)) {
			return false
		}
	}
	return true
}

// Patch returns a new Index: idx without the entries of del and with those
// of ins. idx itself is not changed, so a State that holds it stays as it
// was. Each entry of del must be one of idx's (equal to it, Port included)
// and appear in del once. It copies the shard table and the shards that
// change: far less than building anew when few entries change.
func (idx Index) Patch(del, ins []Entry) Index {
	if idx.shards == nil {
		idx = IndexOf(nil)
	}
	var dels, inss [nShards][]Entry
	for _, e := range del {
		sh := e.NameHash >> (64 - shardBits)
		dels[sh] = append(dels[sh], e)
	}
	for _, e := range ins {
		sh := e.NameHash >> (64 - shardBits)
		inss[sh] = append(inss[sh], e)
	}
	out := Index{shards: new([nShards]indexShard), n: idx.n - len(del) + len(ins)}
	*out.shards = *idx.shards
	for sh := range nShards {
		if len(dels[sh]) > 0 || len(inss[sh]) > 0 {
			out.shards[sh] = indexShardOf(idx.shards[sh].es.Patch(dels[sh], inss[sh]))
		}
	}
	return out
}

// seed is fixed for the life of the process: indexes built at different
// times compare, and nothing hashed here is ever stored.
var seed = maphash.MakeSeed()

// NameHash returns the hash an Index sorts a port named name by.
func NameHash(name string) uint64 { return maphash.String(seed, name) }

// Sum returns a fingerprint of every field Equal compares: the name and
// each field of Fields that ports have. Two ports with the same Sum are
// equal but for a 2^-64 chance.
func (p *Port) Sum() uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	h.WriteString(p.Name)
	h.WriteByte(0)
	for i := range Fields {
		switch f := &Fields[i]; {
		case f.PortKey != nil:
			h.WriteString(f.PortKey(p))
			h.WriteByte(0)
		case f.PortSet != nil:
			for _, s := range *f.PortSet(p) {
				h.WriteString(s)
				h.WriteByte(0)
			}
			h.WriteByte(1)
		}
	}
	return h.Sum64()
}

// Entry returns the entry of idx whose Port is p (the pointer, not an
// equal port), found by p's name.
func (idx Index) Entry(p *Port) (Entry, bool) {
	if idx.shards == nil {
		return Entry{}, false
	}
	h := NameHash(p.Name)
	es := idx.shards[shardOfHash(h)].es
	for i := es.search(h); i < len(es) && es[i].NameHash == h; i++ {
		if es[i].Port == p {
			return es[i], true
		}
	}
	return Entry{}, false
}

// EntryOf returns p's index entry.
func EntryOf(p *Port) Entry {
	return Entry{NameHash: NameHash(p.Name), Sum: p.Sum(), Owned: p.Owned(), Dynamic: p.DynamicAddresses() != "", Port: p}
}

// IndexPorts builds the Index of ports.
func IndexPorts(ports Ports) Index {
	idx := make(Entries, 0, ports.Len())
	for _, p := range ports.All() {
		idx = append(idx, EntryOf(p))
	}
	idx.Sort()
	return IndexOf(idx)
}

// Sort sorts idx by NameHash, in place. It is a radix sort: a million
// entries sort in a few tens of milliseconds, where a comparison sort
// takes several times as long.
func (idx Entries) Sort() {
	if len(idx) < 256 {
		slices.SortFunc(idx, func(a, b Entry) int {
			switch {
			case a.NameHash < b.NameHash:
				return -1
			case a.NameHash > b.NameHash:
				return 1
			}
			return 0
		})
		return
	}
	tmp := make(Entries, len(idx))
	src, dst := idx, tmp
	for shift := uint(0); shift < 64; shift += 16 {
		var count [1 << 16]int
		for i := range src {
			count[(src[i].NameHash>>shift)&0xffff]++
		}
		pos := 0
		for d := range count {
			c := count[d]
			count[d] = pos
			pos += c
		}
		for i := range src {
			d := (src[i].NameHash >> shift) & 0xffff
			dst[count[d]] = src[i]
			count[d]++
		}
		src, dst = dst, src
	}
	// Four passes: the sorted result is back in idx.
}

// Patch returns new Entries: idx without the entries of del and with those
// of ins, sorted as Sort sorts. idx itself is not changed. Each entry of
// del must be one of idx's (equal to it, Port included) and appear in del
// once. It costs a binary search per entry of del and ins and one copy of
// idx: far less than sorting anew when few entries change.
func (idx Entries) Patch(del, ins []Entry) Entries {
	// The positions in idx of the entries to drop, ascending.
	drop := make([]int, 0, len(del))
	for _, e := range del {
		i := idx.search(e.NameHash)
		for i < len(idx) && idx[i].NameHash == e.NameHash && idx[i] != e {
			i++
		}
		if i == len(idx) || idx[i] != e {
			panic("state: Index.Patch: an entry to delete is not in the index")
		}
		drop = append(drop, i)
	}
	slices.Sort(drop)
	ins = slices.Clone(ins)
	slices.SortFunc(ins, func(a, b Entry) int { return cmp.Compare(a.NameHash, b.NameHash) })

	out := make(Entries, 0, len(idx)-len(drop)+len(ins))
	from := 0
	// keep appends idx[from:to] but for the entries dropped.
	keep := func(to int) {
		for len(drop) > 0 && drop[0] < to {
			out = append(out, idx[from:drop[0]]...)
			from, drop = drop[0]+1, drop[1:]
		}
		out = append(out, idx[from:to]...)
		from = to
	}
	// Each entry of ins goes before the first of idx that does not sort
	// before it; ins is sorted, so those positions never decrease.
	for _, e := range ins {
		keep(idx.search(e.NameHash))
		out = append(out, e)
	}
	keep(len(idx))
	return out
}

// search returns the position of the first entry of idx whose NameHash is
// not below h.
func (idx Entries) search(h uint64) int {
	i, _ := slices.BinarySearchFunc(idx, h, func(e Entry, h uint64) int { return cmp.Compare(e.NameHash, h) })
	return i
}

// PortIndex returns s.Index when it describes s.Ports, and otherwise builds
// one. Producers that set s.Index (desired.Build, observed) must set it to
// IndexPorts(s.Ports) after the last change to s.Ports.
func (s State) PortIndex() Index {
	if s.Index.Built() && s.Index.Len() == s.Ports.Len() {
		return s.Index
	}
	return IndexPorts(s.Ports)
}
