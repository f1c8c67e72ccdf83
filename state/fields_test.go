package state

import (
	"reflect"
	"testing"
)

// checkCover fails t unless every exported field of the structs fields
// lists, but those in unmanaged, is reached by exactly one entry of Fields,
// and those in unmanaged by none. reach returns the name of the field f
// reaches, "" when f is not of those structs.
func checkCover(t *testing.T, fields []reflect.StructField, unmanaged map[string]bool, reach func(f *Field) string) {
	t.Helper()
	got := map[string][]string{}
	for i := range Fields {
		f := &Fields[i]
		if name := reach(f); name != "" {
			got[name] = append(got[name], f.Name())
		}
	}
	for _, sf := range fields {
		if !sf.IsExported() {
			continue
		}
		switch n := len(got[sf.Name]); {
		case unmanaged[sf.Name] && n > 0:
			t.Errorf("%s is not a managed field, but Fields has %q for it", sf.Name, got[sf.Name])
		case !unmanaged[sf.Name] && n != 1:
			t.Errorf("%s has %d entries in Fields %q, want exactly one", sf.Name, n, got[sf.Name])
		}
	}
}

// fieldsOf returns the fields of the structs vs point to.
func fieldsOf(vs ...any) []reflect.StructField {
	var out []reflect.StructField
	for _, v := range vs {
		typ := reflect.TypeOf(v).Elem()
		for i := range typ.NumField() {
			out = append(out, typ.Field(i))
		}
	}
	return out
}

// fieldSet returns the name of the one exported field of the structs vs
// point to that holds "x" or []string{"x"}, "" when none or more than one
// does.
func fieldSet(vs ...any) string {
	name := ""
	for _, v := range vs {
		rv := reflect.ValueOf(v).Elem()
		for i := range rv.NumField() {
			if !rv.Type().Field(i).IsExported() {
				continue
			}
			if fv := rv.Field(i).Interface(); fv == any("x") || reflect.DeepEqual(fv, []string{"x"}) {
				if name != "" {
					return ""
				}
				name = rv.Type().Field(i).Name
			}
		}
	}
	return name
}

// TestFieldsCoverPortAndSwitch fails when a field of Port (or of its Rare)
// or of Switch has no entry in Fields, or more than one. A new managed
// column or key is a field of Port or Switch and its entry in Fields;
// everything that compares, fingerprints, diffs, shows, writes or reads
// fields walks Fields, and observed's TestFieldsRoundTrip checks each of
// them does so for every entry.
func TestFieldsCoverPortAndSwitch(t *testing.T) {
	unmanaged := map[string]bool{"Name": true, "UUID": true, "DynamicAddresses": true, "Vendor": true, "VendorSwitch": true, "Adopt": true}
	checkCover(t, fieldsOf(&Port{}, &Rare{}), unmanaged, func(f *Field) string {
		p := &Port{}
		switch {
		case f.PortKey != nil:
			f.SetPortKey(p, "x")
			if f.PortKey(p) != "x" {
				t.Errorf("%s: PortKey does not read what SetPortKey wrote", f.Name())
			}
		case f.PortSet != nil:
			*f.PortSet(p) = []string{"x"}
		default:
			return ""
		}
		r := p.Rare()
		return fieldSet(p, &r)
	})
	checkCover(t, fieldsOf(&Switch{}), map[string]bool{"Name": true, "UUID": true}, func(f *Field) string {
		if f.SwitchKey == nil {
			return ""
		}
		s := &Switch{}
		*f.SwitchKey(s) = "x"
		return fieldSet(s)
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
			if f.PortKey != nil {
				f.SetPortKey(&p, "x")
			}
			if f.PortKey == nil || p.Switch != "x" || f.SwitchKey != nil {
				t.Errorf("Fields[%d] (%s) is a placement but not Port.Switch", i, f.Name())
			}
			placements++
		}
	}
	if placements != 1 {
		t.Errorf("Fields has %d placement fields, want one, Port.Switch", placements)
	}
}
