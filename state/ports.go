package state

import (
	"fmt"
	"hash/maphash"
	"iter"
	"maps"
	"sync/atomic"
)

// Ports maps port names to ports, as a map would, but copies cheaply: a
// Clone shares the entries and copies only the parts later changed. A
// snapshot of a hundred thousand ports that differs from the last in a
// few is then made in microseconds, not the milliseconds (and megabytes)
// a map copy takes on every pass.
//
// The names are split over 256 shards by their NameHash; each shard is a
// map. A shard is changed in place only by the Ports that made it; any
// other copies it first. Clone gives both sides new identities, so neither
// changes a shard the other holds.
//
// Like a map, Ports is a reference: copies of the value are one map, and
// it must not be changed while another goroutine reads it. Reading it (Get,
// Len, All) from many goroutines at once is safe, as is Clone. The zero
// value is an empty Ports that cannot be changed (as a nil map); NewPorts
// makes one that can.
type Ports struct{ m *portMap }

const (
	shardBits = 8
	nShards   = 1 << shardBits
)

type portMap struct {
	shards [nShards]shard
	n      int
	// hint sizes a shard made empty: the ports NewPorts was told of, over
	// the shards.
	hint int
	// gen identifies this map: a shard whose gen differs is shared with
	// another and is copied before a change. Clone changes it (atomically,
	// as snapshots are cloned while others read them).
	gen atomic.Uint64
}

type shard struct {
	ports map[string]*Port
	gen   uint64
}

var gens atomic.Uint64

// NewPorts returns an empty Ports for about n ports.
func NewPorts(n int) Ports {
	m := &portMap{hint: n / nShards}
	m.gen.Store(gens.Add(1))
	return Ports{m}
}

// PortsOf returns a Ports holding the entries of m.
func PortsOf(m map[string]*Port) Ports {
	ps := NewPorts(len(m))
	for k, v := range m {
		ps.Set(k, v)
	}
	return ps
}

func shardOf(name string) int { return shardOfHash(NameHash(name)) }

// shardOfHash is the shard of a name whose NameHash is h.
func shardOfHash(h uint64) int { return int(h >> (64 - shardBits)) }

// Get returns the port called name, or nil.
func (ps Ports) Get(name string) *Port {
	if ps.m == nil {
		return nil
	}
	return ps.m.shards[shardOf(name)].ports[name]
}

// GetBytes is Get for a name held in bytes, which it neither copies nor
// keeps: a caller that builds the name to look it up allocates nothing.
func (ps Ports) GetBytes(name []byte) *Port {
	if ps.m == nil {
		return nil
	}
	// maphash.Bytes of a name is maphash.String of it: its NameHash.
	return ps.m.shards[shardOfHash(maphash.Bytes(seed, name))].ports[string(name)]
}

// Lookup returns the port called name and whether there is one.
func (ps Ports) Lookup(name string) (*Port, bool) {
	p := ps.Get(name)
	return p, p != nil
}

// Len returns the number of ports.
func (ps Ports) Len() int {
	if ps.m == nil {
		return 0
	}
	return ps.m.n
}

// All yields every port with its name, in no particular order.
func (ps Ports) All() iter.Seq2[string, *Port] {
	return func(yield func(string, *Port) bool) {
		if ps.m == nil {
			return
		}
		for i := range ps.m.shards {
			for k, v := range ps.m.shards[i].ports {
				if !yield(k, v) {
					return
				}
			}
		}
	}
}

// Names yields every name, in no particular order.
func (ps Ports) Names() iter.Seq[string] {
	return func(yield func(string) bool) {
		for k := range ps.All() {
			if !yield(k) {
				return
			}
		}
	}
}

// Map returns the ports as a map of their own.
func (ps Ports) Map() map[string]*Port {
	out := make(map[string]*Port, ps.Len())
	for k, v := range ps.All() {
		out[k] = v
	}
	return out
}

// own returns the shard of name, ready to change.
func (ps Ports) own(name string) *shard {
	sh := &ps.m.shards[shardOf(name)]
	if g := ps.m.gen.Load(); sh.gen != g {
		sh.ports, sh.gen = maps.Clone(sh.ports), g
		if sh.ports == nil {
			sh.ports = make(map[string]*Port, ps.m.hint)
		}
	}
	return sh
}

// Set makes p, which must not be nil, the port called name.
func (ps Ports) Set(name string, p *Port) {
	sh := ps.own(name)
	if _, ok := sh.ports[name]; !ok {
		ps.m.n++
	}
	sh.ports[name] = p
}

// Delete removes the port called name, if any.
func (ps Ports) Delete(name string) {
	if ps.m == nil {
		return
	}
	if _, ok := ps.m.shards[shardOf(name)].ports[name]; !ok {
		return
	}
	delete(ps.own(name).ports, name)
	ps.m.n--
}

// Clone returns a Ports with the same entries, to be changed apart from
// ps: it costs a copy of the shard table, and each shard either side
// changes afterwards is copied then.
func (ps Ports) Clone() Ports {
	c := &portMap{}
	if ps.m != nil {
		c.shards, c.n, c.hint = ps.m.shards, ps.m.n, ps.m.hint
		ps.m.gen.Store(gens.Add(1))
	}
	c.gen.Store(gens.Add(1))
	return Ports{c}
}

// String prints the ports as fmt prints a map of them.
func (ps Ports) String() string { return fmt.Sprint(ps.Map()) }
