package sources

import (
	"reflect"

	"k8s.io/apimachinery/pkg/api/meta"
)

// Most writes to the objects ovn-sync watches change nothing it reads: a
// StatefulSet's status, a Namespace's labels, a kube-ovn Subnet's status
// (usingIPs, at every allocation), a VirtualMachine's printableStatus, the
// managed fields of every write. The update event fires all the same, with
// a new resourceVersion. The stores keep each object in a lean form (the
// informers' transforms: stripPod, typedTransform and the stored forms)
// that holds only what ovn-sync reads; an update whose old and new lean
// forms are equal but for the bookkeeping every write moves
// (resourceVersion, generation, managed fields) is no change: it names
// nothing and starts no pass (Informers.watch, sameRead).

// sameVersion reports whether a and b, one object before and after an
// update, have the same resourceVersion: a relist delivering the object
// unchanged.
func sameVersion(a, b any) bool {
	va, ok1 := resourceVersion(Unwrap(a))
	vb, ok2 := resourceVersion(Unwrap(b))
	return ok1 && ok2 && va != "" && va == vb
}

// resourceVersion is obj's resourceVersion: of a stored form read off its
// fields, where meta.Accessor would make its metadata, maps and all.
func resourceVersion(obj any) (string, bool) {
	if s, ok := obj.(interface{ kept() *storedMeta }); ok {
		return s.kept().version(), true
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return "", false
	}
	return m.GetResourceVersion(), true
}

// sameRead reports whether old and cur, the stored forms of one object
// before and after an update, hold the same of everything the stores keep
// but bookkeeping: resourceVersion, generation (a VM's moves with spec
// fields the lean form drops) and managed fields. An object that could not
// be converted is never the same: its update is recorded, so that what
// can be read of it is known (Unreadable).
func sameRead(old, cur any) bool {
	a, b := Unwrap(old), Unwrap(cur)
	if _, bad := a.(*unconvertible); bad {
		return false
	}
	if _, bad := b.(*unconvertible); bad {
		return false
	}
	if a == nil || b == nil || reflect.TypeOf(a) != reflect.TypeOf(b) {
		return false
	}
	return reflect.DeepEqual(withoutBookkeeping(a), withoutBookkeeping(b))
}

// withoutBookkeeping is a shallow copy of o, a pointer to an object, with
// its resourceVersion, generation and managed fields cleared; anything
// else is returned as it is.
func withoutBookkeeping(o any) any {
	v := reflect.ValueOf(o)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return o
	}
	c := reflect.New(v.Elem().Type())
	c.Elem().Set(v.Elem())
	cp := c.Interface()
	if s, ok := cp.(interface{ kept() *storedMeta }); ok { // a stored form: no generation or managed fields
		k := s.kept()
		k.setIDs(k.name(), "", k.uid())
		return cp
	}
	m, err := meta.Accessor(cp)
	if err != nil {
		return o
	}
	m.SetResourceVersion("")
	m.SetGeneration(0)
	m.SetManagedFields(nil)
	return cp
}
