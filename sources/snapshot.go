package sources

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"k8s.io/client-go/tools/cache"

	"github.com/ovn-sync/ovn-sync/desired"
	"github.com/ovn-sync/ovn-sync/state"
)

// Unreadable is an object an informer holds that could not be converted into
// its typed form. Its owner is unknown, and unknown is not absent: a pass
// that has any must not delete.
type Unreadable struct {
	Kind      Kind
	Namespace string
	Name      string
	Err       string
}

func (u Unreadable) String() string {
	return fmt.Sprintf("%s %s/%s: %s", u.Kind, u.Namespace, u.Name, u.Err)
}

// Snapshot is what the informers held at one moment.
type Snapshot struct {
	Inputs     desired.Inputs
	Unreadable []Unreadable
	// Version moves whenever an informer queues or reports a change or a
	// new informer starts: two snapshots with the same Version hold the
	// same objects, but for a change that raced with the later one's
	// listing (the Version is read before the stores, so such a change
	// gives the next snapshot a new Version). A take whose Version equals
	// the previous take's names no change but those still in flight or
	// made as it listed the stores.
	Version uint64
	// Changed names the objects informers reported created, updated or
	// deleted since the previous take (Take, TakeChanges), each once,
	// sorted (Kind, Namespace, Name). It is meaningful only when
	// AllChanged is false.
	//
	// A take hands each change out once: a caller that does not act on a
	// snapshot (a failed pass) must carry its Changed over to the next, or
	// treat every object as changed. An object may be named again in the
	// snapshot after the one whose stores first showed its change; acting
	// on it twice must be harmless.
	Changed []state.ObjectRef
	// AllChanged is set when the snapshot cannot say what changed since the
	// previous take: always for Inputs; for a take, when it is the first,
	// an informer started since the previous one (Start, Discover), or more
	// than MaxChanged objects changed. A caller must then treat every
	// object as changed.
	AllChanged bool
}

// Inputs reads every store, leaving what changed for Take: its snapshot
// says AllChanged. The objects are the informers' own: they are shared and
// must not be modified.
func (s *Informers) Inputs() Snapshot {
	inf, version := s.current()
	snap := collectAll(listStores(inf))
	snap.Version, snap.AllChanged = version, true
	return snap
}

// Take is Inputs that also takes what changed since the previous take
// (Changed, AllChanged): the reconcile loop, the one caller that acts on
// changes, calls it.
func (s *Informers) Take() Snapshot {
	var lists map[Kind][]any
	version, changed, all := s.takeAround(func(inf map[Kind]cache.SharedIndexInformer) { lists = listStores(inf) })
	snap := collectAll(lists)
	snap.Version, snap.Changed, snap.AllChanged = version, changed, all
	return snap
}

// current returns the started informers and the version of what they
// hold, read together (an informer starts under s.mu, and moves the
// version) and before any store is listed, taking nothing: what Inputs
// reads.
func (s *Informers) current() (map[Kind]cache.SharedIndexInformer, uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	inf := maps.Clone(s.inf)
	s.chmu.Lock()
	defer s.chmu.Unlock()
	return inf, s.version
}

// listStores lists the store of each informer.
func listStores(inf map[Kind]cache.SharedIndexInformer) map[Kind][]any {
	lists := make(map[Kind][]any, len(Kinds))
	for k, i := range inf {
		lists[k] = i.GetStore().List()
	}
	return lists
}

// collectAll is the snapshot of the objects listed of every kind, in their
// typed forms, and of those that could not be read.
func collectAll(lists map[Kind][]any) Snapshot {
	var snap Snapshot
	for _, d := range kindDefs {
		d.collect(&snap.Inputs, lists[d.kind], &snap.Unreadable)
	}
	return snap
}

// collectWhole fills in the kinds every Build reads whole, which are few:
// those TakeChanges lists.
func collectWhole(in *desired.Inputs, lists map[Kind][]any, bad *[]Unreadable) {
	for _, d := range kindDefs {
		if d.whole {
			d.collect(in, lists[d.kind], bad)
		}
	}
}

// Changes is what changed since the previous take, and where to look the
// objects up: what a pass that rebuilds only what changed reads, without
// listing every store.
type Changes struct {
	// Version, Changed and AllChanged are as in a Snapshot.
	Version    uint64
	Changed    []state.ObjectRef
	AllChanged bool
	// Objects looks objects up in the stores as they are at each lookup,
	// through indexes the informers keep; its Networks are the few objects
	// of the kinds every Build reads whole, listed at the take. It is not
	// safe for concurrent use.
	Objects desired.Objects
	// Unreadable are the objects that could not be read: of the kinds
	// listed, and of the others those a store may hold since a transform
	// found them so. A pass that has any must not delete, as with a
	// Snapshot's.
	Unreadable []Unreadable
}

// TakeChanges takes what changed since the previous take, as Take does,
// and lists only the stores of the few kinds every Build reads whole: the
// others are looked up (Changes.Objects), by key or through the informers'
// indexes, so that a pass that rebuilds what changed costs that, not every
// object. When the changes say AllChanged the caller builds in full, and
// lists every store (Inputs).
//
// The changes are read in two steps around the listing, as for Take: the
// objects listed are consistent with Changed. A lookup comes after the
// take: for a change Changed names, it shows that change (its handler ran
// before the second step, so its store held it) or a newer one, or, for a
// change still in flight, perhaps not yet; either way the next take names
// the object again, as any change whose handler runs after this take's
// second step is recorded for it, or in flight at it. So what a lookup
// shows beyond what Changed says is named by a later take, and an owner
// rebuilt from a newer object than it was told of is rebuilt again.
func (s *Informers) TakeChanges() Changes {
	var c Changes
	l := &lookup{}
	var lists map[Kind][]any
	c.Version, c.Changed, c.AllChanged = s.takeAround(func(inf map[Kind]cache.SharedIndexInformer) {
		l.inf = inf
		lists = map[Kind][]any{}
		for k, i := range inf {
			if readWhole(k) {
				lists[k] = i.GetStore().List()
			}
		}
	})
	collectWhole(&l.nets, lists, &c.Unreadable)
	s.chmu.Lock()
	for ref, u := range s.unreadable {
		if !readWhole(Kind(ref.Kind)) {
			c.Unreadable = append(c.Unreadable, u)
		}
	}
	s.chmu.Unlock()
	slices.SortFunc(c.Unreadable, func(a, b Unreadable) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	c.Objects = l
	return c
}

// collect is objs, listed of kind k, in their typed form T; those that
// could not be read are appended to bad.
func collect[T any](k Kind, objs []any, bad *[]Unreadable) []T {
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		switch v := apiObject(o).(type) {
		case T:
			out = append(out, v)
		case *unconvertible:
			*bad = append(*bad, v.unreadable(k))
		default:
			*bad = append(*bad, Unreadable{Kind: k, Err: fmt.Sprintf("unexpected %T in the store", o)})
		}
	}
	return out
}
