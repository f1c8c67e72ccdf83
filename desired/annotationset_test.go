package desired

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unsafe"
)

// Annotations give back the map they were made from, nil and empty apart,
// in a new map at each call, and each value by its key; maps of the same
// keys share one list of them, also once more lists than the bound were
// handed out.
func TestAnnotations(t *testing.T) {
	var kl KeyLists
	many := map[string]string{}
	for i := range 40 { // past Of's buffers: 40 keys, 1.7 KB of them
		many[fmt.Sprintf("tenant-%02d.ovn.kubernetes.io/ip_address", i)] = fmt.Sprint(i)
	}
	for _, m := range []map[string]string{nil, {}, {"ovn.kubernetes.io/ip_address": "10.16.0.5"}, {"a": "1", "b": ""}, many} {
		a := kl.Of(m, nil)
		got := a.Map()
		if !reflect.DeepEqual(got, m) || (got == nil) != (m == nil) || a.Len() != len(m) {
			t.Errorf("Of(%v).Map() = %v, Len %d", m, got, a.Len())
		}
		into := map[string]string{"left": "over"}
		if got := a.MapInto(into); !reflect.DeepEqual(got, m) || (got == nil) != (m == nil) ||
			(m != nil && reflect.ValueOf(got).UnsafePointer() != reflect.ValueOf(into).UnsafePointer()) {
			t.Errorf("Of(%v).MapInto(a map) = %v, not made in that map", m, got)
		}
		if got := a.MapInto(nil); !reflect.DeepEqual(got, m) || (got == nil) != (m == nil) {
			t.Errorf("Of(%v).MapInto(nil) = %v", m, got)
		}
		for k, v := range m {
			if g, ok := a.Get(k); !ok || g != v {
				t.Errorf("Of(%v).Get(%q) = %q, %v", m, k, g, ok)
			}
		}
		if _, ok := a.Get("absent"); ok {
			t.Errorf("Of(%v) holds a key it was not given", m)
		}
		if got != nil {
			got["x"] = "changed"
			if again := a.Map(); !reflect.DeepEqual(again, m) {
				t.Errorf("Of(%v) changed with the map it gave: %v", m, again)
			}
		}
	}
	a, b := kl.Of(map[string]string{"a": "1", "b": "2"}, nil), kl.Of(map[string]string{"b": "3", "a": "4"}, nil)
	if a.keys != b.keys {
		t.Error("two maps of the same keys keep two lists of them")
	}
	for i := range 1<<10 + 1 {
		kl.Of(map[string]string{fmt.Sprint(i): ""}, nil)
	}
	c := kl.Of(map[string]string{"a": "5", "b": "6"}, nil)
	if !reflect.DeepEqual(c.Map(), map[string]string{"a": "5", "b": "6"}) || kl.Len() > 1<<10 {
		t.Errorf("past the bound: %v, %d lists held", c.Map(), kl.Len())
	}
	if d := kl.Of(map[string]string{"b": "7", "a": "8"}, nil); d.keys != c.keys {
		t.Error("past the bound, two maps of the same keys keep two lists of them")
	}
	kube := kl.Of(map[string]string{"ovn.kubernetes.io/ip_address": "10.16.0.5", "team": "a"}, func(k string) bool { return KubeOVNSuffix(k) != "" })
	if got := kube.Map(); !reflect.DeepEqual(got, map[string]string{"ovn.kubernetes.io/ip_address": "10.16.0.5"}) {
		t.Errorf("Of(m, kube-ovn keys) = %v", got)
	}
	if none := kl.Of(map[string]string{"team": "a"}, func(k string) bool { return KubeOVNSuffix(k) != "" }); none.Map() != nil {
		t.Errorf("Of(m, keep) with no key kept = %v, want the zero Annotations", none.Map())
	}
	if empty := kl.Of(map[string]string{}, func(k string) bool { return KubeOVNSuffix(k) != "" }).Map(); empty == nil || len(empty) != 0 {
		t.Errorf("Of(an empty map, keep) = %#v, want an empty map", empty)
	}
	// The values are copied into one string, in which they lie end to
	// end, each after its length: a long one (a two-byte length) and
	// those after it are read back whole.
	long := map[string]string{"a": strings.Repeat("x", 300), "b": "", "c": "after", "d": strings.Repeat("y", 1<<14)}
	got := kl.Of(long, nil)
	if !reflect.DeepEqual(got.Map(), long) {
		t.Errorf("Of(long values) gives back %d values, not the map's", len(got.Map()))
	}
	in := func(v string) bool {
		start := uintptr(unsafe.Pointer(unsafe.StringData(got.vals)))
		at := uintptr(unsafe.Pointer(unsafe.StringData(v)))
		return len(v) == 0 || (at >= start && at+uintptr(len(v)) <= start+uintptr(len(got.vals)))
	}
	for k, v := range long {
		if g, _ := got.Get(k); !in(g) || unsafe.StringData(g) == unsafe.StringData(v) {
			t.Errorf("the value of %s is not a part of the one string of values", k)
		}
	}
	calls := 0
	shared := KeyLists{Key: func(k string) string { calls++; return strings.Clone(k) }}
	shared.Of(map[string]string{"a": "1", "b": "2"}, nil)
	shared.Of(map[string]string{"a": "3", "b": "4"}, nil)
	if calls != 2 {
		t.Errorf("Key called %d times for one list of two keys, want 2", calls)
	}
}
