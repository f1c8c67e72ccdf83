package state

import (
	"reflect"
	"testing"
)

// checkCover fails t unless every exported field of T but those in
// unmanaged is reached by exactly one entry of Fields, and those in
// unmanaged by none. reach returns the pointer into v that f gives, or nil
// when values of type T do not have f.
func checkCover[T any](t *testing.T, unmanaged map[string]bool, reach func(f *Field, v *T) any) {
	t.Helper()
	v := new(T)
	rv, typ := reflect.ValueOf(v).Elem(), reflect.TypeFor[T]()
	got := map[string][]string{}
	for i := range Fields {
		f := &Fields[i]
		ptr := reach(f, v)
		if ptr == nil {
			continue
		}
		name := ""
		for j := range typ.NumField() {
			if rv.Field(j).Addr().Interface() == ptr {
				name = typ.Field(j).Name
			}
		}
		if name == "" {
			t.Errorf("Fields[%d] (%s) reaches no field of %s", i, f.Name(), typ.Name())
		}
		got[name] = append(got[name], f.Name())
	}
	for j := range typ.NumField() {
		sf := typ.Field(j)
		if !sf.IsExported() {
			continue
		}
		switch n := len(got[sf.Name]); {
		case unmanaged[sf.Name] && n > 0:
			t.Errorf("%s.%s is not a managed field, but Fields has %q for it", typ.Name(), sf.Name, got[sf.Name])
		case !unmanaged[sf.Name] && n != 1:
			t.Errorf("%s.%s has %d entries in Fields %q, want exactly one", typ.Name(), sf.Name, n, got[sf.Name])
		}
	}
}

// TestFieldsCoverPortAndSwitch fails when a field of Port or Switch has no
// entry in Fields, or more than one. A new managed column or key is a field
// of Port or Switch and its entry in Fields; everything that compares,
// fingerprints, diffs, shows, writes or reads fields walks Fields, and
// observed's TestFieldsRoundTrip checks each of them does so for every entry.
func TestFieldsCoverPortAndSwitch(t *testing.T) {
	unmanaged := map[string]bool{"Name": true, "UUID": true, "DynamicAddresses": true, "Vendor": true, "VendorSwitch": true, "Adopt": true}
	checkCover(t, unmanaged, func(f *Field, p *Port) any {
		switch {
		case f.PortKey != nil:
			return f.PortKey(p)
		case f.PortSet != nil:
			return f.PortSet(p)
		}
		return nil
	})
	checkCover(t, map[string]bool{"Name": true, "UUID": true}, func(f *Field, s *Switch) any {
		if f.SwitchKey != nil {
			return f.SwitchKey(s)
		}
		return nil
	})
}

// TestFieldsWellFormed checks what the users of Fields rely on: each entry
// is a set column or a key of a map column, of ports, switches or both, and
// no two entries name the same column and key.
func TestFieldsWellFormed(t *testing.T) {
	seen := map[string]int{}
	placements := 0
	for i := range Fields {
		f := &Fields[i]
		if j, ok := seen[f.Name()]; ok {
			t.Errorf("Fields[%d] and Fields[%d] are both %s", j, i, f.Name())
		}
		seen[f.Name()] = i
		switch {
		case f.Column == "":
			t.Errorf("Fields[%d] has no column", i)
		case f.PortKey != nil && f.PortSet != nil:
			t.Errorf("Fields[%d] (%s) is both a key and a set of ports", i, f.Name())
		case f.PortSet != nil && (f.Key != "" || f.SwitchKey != nil):
			t.Errorf("Fields[%d] (%s) is a set column of ports with a key, or a field of switches too", i, f.Name())
		case f.Ref != "" && (f.Key != "" || f.PortKey == nil || f.SwitchKey != nil):
			t.Errorf("Fields[%d] (%s) is a reference but not a whole column of ports held by PortKey", i, f.Name())
		case f.Ref == "" && (f.PortKey != nil || f.SwitchKey != nil) && f.Key == "":
			t.Errorf("Fields[%d] (%s) is a key field with no key", i, f.Name())
		case f.PortKey == nil && f.PortSet == nil && f.SwitchKey == nil:
			t.Errorf("Fields[%d] (%s) belongs to neither ports nor switches", i, f.Name())
		}
		if f.Placement {
			// diff.Compute moves a port whose Switch differs; no other
			// field can be a placement.
			var p Port
			if f.PortKey == nil || f.PortKey(&p) != &p.Switch || f.SwitchKey != nil {
				t.Errorf("Fields[%d] (%s) is a placement but not Port.Switch", i, f.Name())
			}
			placements++
		}
	}
	if placements != 1 {
		t.Errorf("Fields has %d placement fields, want one, Port.Switch", placements)
	}
}
