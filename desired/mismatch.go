package desired

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/ovn-sync/ovn-sync/state"
)

// wantEqual reports whether two ports of Want are the same: in every field
// but the UUID a port that is the NB's row itself carries (write).
func wantEqual(a, b *state.Port) bool {
	x, y := *a, *b
	x.UUID, y.UUID = "", ""
	return reflect.DeepEqual(x, y)
}

// Mismatch compares an incremental result with a full Build of the same
// inputs and NB: "" when they agree, else the first few differences, each
// naming the port and its owner (or the switch, row or problem). Facts
// (Result.Ports) are not compared: an incremental result has the rebuilt
// owners' only.
func Mismatch(inc, full Result) string {
	var diffs []string
	add := func(s string) bool {
		diffs = append(diffs, s)
		return len(diffs) < 5
	}
	port := func(p *state.Port) string {
		if p == nil {
			return "none"
		}
		return strings.Join(p.Addresses, ",") + " on " + p.Switch + " (" + p.Owner + ")"
	}
	for _, name := range differentPorts(inc.Want.Ports, full.Want.Ports) {
		a, b := inc.Want.Ports.Get(name), full.Want.Ports.Get(name)
		if !add("port " + name + ": incremental " + port(a) + ", full " + port(b) + fieldDiff(a, b)) {
			break
		}
	}
	for _, name := range unionKeys(inc.Want.Switches, full.Want.Switches) {
		a, b := inc.Want.Switches[name], full.Want.Switches[name]
		if a == nil || b == nil || !reflect.DeepEqual(*a, *b) {
			add("switch " + name + " differs")
		}
	}
	for _, name := range unionKeys(inc.Want.DHCP, full.Want.DHCP) {
		a, b := inc.Want.DHCP[name], full.Want.DHCP[name]
		if a == nil || b == nil || !reflect.DeepEqual(*a, *b) {
			add("DHCP_Options " + name + " differs")
		}
	}
	if inc.Want.Index.Len() != inc.Want.Ports.Len() {
		add("the incremental index does not list every port")
	}
	problems := func(what string, a, b []Problem) {
		for _, p := range a {
			if !slices.Contains(b, p) {
				add(what + " only incremental: " + p.Object() + " " + p.Reason + ": " + p.Message)
			}
		}
		for _, p := range b {
			if !slices.Contains(a, p) {
				add(what + " only full: " + p.Object() + " " + p.Reason + ": " + p.Message)
			}
		}
	}
	problems("problem", inc.Problems, full.Problems)
	problems("notice", inc.Notices, full.Notices)
	if inc.Again != full.Again {
		add("Again differs")
	}
	if len(diffs) == 0 && (!slices.Equal(inc.Problems, full.Problems) || !slices.Equal(inc.Notices, full.Notices)) {
		add("problems in another order")
	}
	return strings.Join(diffs, "; ")
}

// differentPorts names, sorted, the ports a and b do not want alike: in
// one alone, or different. It walks both and copies neither: a
// self-check compares two results of every port at a full pass's end.
func differentPorts(a, b state.Ports) []string {
	var names []string
	for name, q := range b.All() {
		if p := a.Get(name); p == nil || q == nil || p != q && !wantEqual(p, q) {
			names = append(names, name)
		}
	}
	for name := range a.All() {
		if _, ok := b.Lookup(name); !ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// fieldDiff names the fields in which a and b differ, with both values:
// "" unless both are ports.
func fieldDiff(a, b *state.Port) string {
	if a == nil || b == nil {
		return ""
	}
	var d []string
	diff := func(va, vb reflect.Value) {
		for i := range va.NumField() {
			if !va.Type().Field(i).IsExported() {
				continue
			}
			if x, y := va.Field(i).Interface(), vb.Field(i).Interface(); !reflect.DeepEqual(x, y) {
				d = append(d, fmt.Sprintf("%s %q, %q", va.Type().Field(i).Name, x, y))
			}
		}
	}
	diff(reflect.ValueOf(*a), reflect.ValueOf(*b))
	diff(reflect.ValueOf(a.Rare()), reflect.ValueOf(b.Rare()))
	return ": " + strings.Join(d, ", ")
}

func unionKeys[V any](a, b map[string]V) []string {
	keys := slices.Collect(maps.Keys(a))
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// Behind reports whether inc differs from full only by ports of owners
// full wants no port of and inc did not rebuild, with everything else the
// same: deletions the incremental state was not told of yet. Informers tell of a deletion a
// relist finds only after their stores show it (see sources.Informers):
// the next pass is told, and removes the ports.
func Behind(inc, full Result) bool {
	owners := map[string]bool{}
	for _, p := range full.Want.Ports.All() {
		owners[p.Owner] = true
	}
	trimmed := inc
	trimmed.Want.Ports = state.NewPorts(inc.Want.Ports.Len())
	behind := false
	for name, p := range inc.Want.Ports.All() {
		if _, ok := full.Want.Ports.Lookup(name); !ok && !owners[p.Owner] && !inc.rebuilt[p.Owner] {
			behind = true
			continue
		}
		trimmed.Want.Ports.Set(name, p)
	}
	trimmed.Want.Index = state.IndexPorts(trimmed.Want.Ports)
	return behind && Mismatch(trimmed, full) == ""
}
