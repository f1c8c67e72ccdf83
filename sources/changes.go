package sources

import (
	"cmp"
	"maps"
	"slices"

	"github.com/ovn-sync/ovn-sync/state"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
)

// MaxChanged bounds the objects Informers remembers as changed between two
// takes. Past it, the take says AllChanged instead: a caller would rebuild
// most owners anyway, and the set stays small during a storm of events.
const MaxChanged = 4096

// watch registers the event handlers of one informer. Handlers record
// which object changed, by its namespace and name, and say that a pass is
// due; of an update they read no more than whether it changed what the
// store keeps (sameVersion, sameRead). s.mu must be held.
func (s *Informers) watch(k Kind, inf cache.SharedIndexInformer) {
	event := func(obj any) {
		s.record(k, obj)
		if s.opts.OnEvent != nil {
			s.opts.OnEvent(k)
		}
		s.notify()
	}
	reg, _ := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: event,
		UpdateFunc: func(old, cur any) {
			// Periodic relists deliver unchanged objects; they change nothing.
			if sameVersion(old, cur) {
				s.landed(k, cur)
				return
			}
			// Nor does a write of what the store does not keep (a status,
			// labels): the store holds cur, which reads as old did. Its
			// transform marked it in flight; it lands here.
			if sameRead(old, cur) {
				s.landed(k, cur)
				if s.opts.OnDrop != nil {
					s.opts.OnDrop(k)
				}
				return
			}
			event(cur)
		},
		DeleteFunc: func(obj any) {
			s.recordGone(k, obj)
			if s.opts.OnEvent != nil {
				s.opts.OnEvent(k)
			}
			s.notify()
		},
	})
	s.inf[k] = inf
	if reg != nil {
		s.regs[k] = reg
	}
	// A new informer's objects, or a kind that was absent and counted as
	// empty, change what Inputs holds without naming anything.
	s.chmu.Lock()
	s.version++
	s.setAllChangedLocked()
	s.chmu.Unlock()
}

// recording returns t, noting the object it is given as in flight.
// An informer transforms an object as it queues it, before its store
// holds it; its event handler runs after. From the one to the other, every
// take names the object (a take leaves it in flight); the handler then
// records it as changed, for the next take. So a take whose stores show a
// change always names it: a pass that rebuilds what changed sees
// everything a full Build of the same snapshot would. (A deletion a relist
// finds reaches the handler only, as a tombstone: that one is named by the
// first take after the handler ran.)
//
// An object is in flight until the handler is given what its last
// transform returned; counting transforms would not do. client-go's
// watch-list (an informer's first listing streamed by a watch) transforms
// each object twice, streaming it into a temporary store and again as it
// hands that store's content to the queue, and runs the handler once. A
// result never queued (a watch-list attempt given up, the object gone
// before the next) leaves the object in flight until the handler of a
// later change of it runs.
func (s *Informers) recording(kind func(any) Kind, t cache.TransformFunc) cache.TransformFunc {
	return func(obj any) (any, error) {
		out, err := t(obj)
		if err != nil {
			return out, err // not queued
		}
		k := kind(obj)
		ref, ok := refOf(k, obj)
		if k == "" || !ok {
			return out, nil
		}
		// The result is not queued yet, so the store does not hold it.
		s.chmu.Lock()
		s.version++
		if o, isObj := Unwrap(out).(runtime.Object); isObj {
			if s.inflight == nil {
				s.inflight = map[state.ObjectRef]runtime.Object{}
			}
			s.inflight[ref] = o
		}
		if u, bad := Unwrap(out).(*unconvertible); bad {
			if s.unreadable == nil {
				s.unreadable = map[state.ObjectRef]Unreadable{}
			}
			s.unreadable[ref] = u.unreadable(k)
		}
		s.chmu.Unlock()
		return out, nil
	}
}

// landed notes that the handler of obj's change ran: if obj is what the
// last transform of it returned, it is no longer in flight.
func (s *Informers) landed(k Kind, obj any) {
	if ref, ok := refOf(k, obj); ok {
		s.chmu.Lock()
		s.landedLocked(ref, obj, obj)
		s.chmu.Unlock()
	}
}

// landedLocked notes that the handler of ref's change was given obj, after
// which the store holds held (nil: a deletion). Once ref is not in flight,
// held says whether it can be read. s.chmu must be held.
func (s *Informers) landedLocked(ref state.ObjectRef, obj, held any) {
	if o, ok := Unwrap(obj).(runtime.Object); ok && o == s.inflight[ref] {
		delete(s.inflight, ref)
		if len(s.inflight) == 0 {
			s.inflight = nil // a map keeps its largest size: the first listing's
		}
	}
	if _, ok := s.inflight[ref]; ok {
		return // a later change's transform decides
	}
	if _, bad := held.(*unconvertible); !bad {
		delete(s.unreadable, ref)
	}
}

// record notes that an informer of kind k reported obj created, updated or
// deleted. client-go calls a handler after its store holds the change, so
// any take after this lists the stores after the change too.
func (s *Informers) record(k Kind, obj any) { s.recordHeld(k, obj, Unwrap(obj)) }

// recordGone is record for a deletion: the store no longer holds obj.
func (s *Informers) recordGone(k Kind, obj any) { s.recordHeld(k, obj, nil) }

func (s *Informers) recordHeld(k Kind, obj, held any) {
	ref, ok := refOf(k, obj)
	s.chmu.Lock()
	defer s.chmu.Unlock()
	s.version++
	if ok {
		s.landedLocked(ref, obj, held)
	}
	if s.allChanged {
		return
	}
	if _, seen := s.changed[ref]; ok && seen {
		return
	}
	if !ok || len(s.changed) >= MaxChanged {
		s.setAllChangedLocked()
		return
	}
	if s.changed == nil {
		s.changed = map[state.ObjectRef]struct{}{}
	}
	s.changed[ref] = struct{}{}
}

// setAllChangedLocked gives up naming what changed until the next take.
// s.chmu must be held.
func (s *Informers) setAllChangedLocked() {
	s.allChanged = true
	s.changed = nil
}

// refOf names the object of an event of kind k: from its metadata, or for
// a delete tombstone whose object cannot be read, from the tombstone's
// "namespace/name" key. It reports false if neither names it.
func refOf(k Kind, obj any) (state.ObjectRef, bool) {
	if s, ok := Unwrap(obj).(interface{ kept() *storedMeta }); ok && s.kept().name() != "" {
		return state.ObjectRef{Kind: string(k), Namespace: s.kept().namespace, Name: s.kept().name()}, true
	}
	if m, err := meta.Accessor(Unwrap(obj)); err == nil && m.GetName() != "" {
		return state.ObjectRef{Kind: string(k), Namespace: m.GetNamespace(), Name: m.GetName()}, true
	}
	var key string
	switch t := obj.(type) {
	case cache.DeletedFinalStateUnknown:
		key = t.Key
	case *cache.DeletedFinalStateUnknown:
		if t != nil {
			key = t.Key
		}
	}
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil || name == "" {
		return state.ObjectRef{}, false
	}
	return state.ObjectRef{Kind: string(k), Namespace: ns, Name: name}, true
}

func (s *Informers) notify() {
	select {
	case s.changes <- struct{}{}:
	default:
	}
}

// takeAround takes what changed, in two steps around list, which reads the
// stores of the informers it is given (Take, TakeChanges). Before list,
// the version and the changes the handlers recorded are taken. After it,
// the changes still in flight (queued, their handlers not run yet) and
// those handlers recorded meanwhile are named too, and left for the next
// take. A change list shows reached its store before list read it and was
// queued before that; by the second step its handler either had not run
// (in flight), ran after the first step (recorded since) or before it
// (taken): it is named. A change named but not shown (queued, not stored
// yet) is named again later.
func (s *Informers) takeAround(list func(map[Kind]cache.SharedIndexInformer)) (version uint64, changed []state.ObjectRef, all bool) {
	s.mu.Lock()
	inf := maps.Clone(s.inf)
	s.chmu.Lock()
	version, all = s.version, s.allChanged
	names := s.changed
	s.changed, s.allChanged = nil, false
	s.chmu.Unlock()
	s.mu.Unlock()
	list(inf)
	if !all {
		s.chmu.Lock()
		if s.allChanged {
			all = true
		}
		if names == nil {
			names = map[state.ObjectRef]struct{}{}
		}
		for ref := range s.inflight {
			names[ref] = struct{}{}
		}
		for ref := range s.changed {
			names[ref] = struct{}{}
		}
		s.chmu.Unlock()
	}
	if !all && len(names) > MaxChanged {
		all = true // a relist in flight, say
	}
	if !all {
		changed = slices.SortedFunc(maps.Keys(names), compareRefs)
	}
	return version, changed, all
}

// compareRefs orders object refs by kind, namespace, then name.
func compareRefs(a, b state.ObjectRef) int {
	return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}
