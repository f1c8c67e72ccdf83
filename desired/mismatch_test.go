package desired

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/ovn-sync/ovn-sync/state"
)

// Mismatch is the oracle of every incremental test, the property test
// among them, and of run mode's self-check: it must see each way two
// results can differ, and name the port. Each case edits one result of
// two Builds of the same inputs, in one field of one port (every field
// of Port and of Rare but UUID, which an incremental result may lack), by
// a port more or less, or elsewhere.
func TestMismatchSeesEveryDifference(t *testing.T) {
	cfg, err := NewConfig("ovn-default", []string{"10.16.0.0/16"}, []string{"10.16.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	in := Inputs{Pods: []*corev1.Pod{pod("tenant", "a", nil), pod("tenant", "b", nil)}}
	build := func() Result { return Build(in, cfg, state.New(0)) }
	if d := Mismatch(build(), build()); d != "" {
		t.Fatalf("two Builds of the same inputs: %s", d)
	}
	const name = "a.tenant"
	edit := func(f func(p *state.Port)) func(r *Result) {
		return func(r *Result) {
			p := *r.Want.Ports.Get(name)
			f(&p)
			r.Want.Ports.Set(name, &p)
		}
	}
	cases := map[string]func(r *Result){
		"a port less": func(r *Result) { r.Want.Ports.Delete(name) },
		"a port more": func(r *Result) {
			p := *r.Want.Ports.Get(name)
			p.Name = "c.tenant"
			r.Want.Ports.Set(p.Name, &p)
		},
		"a switch":  func(r *Result) { r.Want.Switches["other"] = &state.Switch{Name: "other"} },
		"a problem": func(r *Result) { r.Problems = append(r.Problems, Problem{Kind: kindPod, Name: "a", Reason: "R"}) },
		"Again":     func(r *Result) { r.Again = !r.Again },
	}
	port := reflect.TypeFor[state.Port]()
	for i := range port.NumField() {
		f := port.Field(i)
		if !f.IsExported() || f.Name == "UUID" || f.Name == "Name" {
			continue
		}
		cases["port field "+f.Name] = edit(func(p *state.Port) {
			v := reflect.ValueOf(p).Elem().Field(i)
			switch v.Kind() {
			case reflect.String:
				v.SetString(v.String() + "x")
			case reflect.Slice:
				v.Set(reflect.ValueOf([]string{"x"}))
			default:
				t.Fatalf("Port.%s: a %s, which this test cannot change", f.Name, v.Kind())
			}
		})
	}
	rare := reflect.TypeFor[state.Rare]()
	for i := range rare.NumField() {
		f := rare.Field(i)
		cases["rare field "+f.Name] = edit(func(p *state.Port) {
			p.EditRare(func(r *state.Rare) {
				v := reflect.ValueOf(r).Elem().Field(i)
				if v.Kind() != reflect.String {
					t.Fatalf("Rare.%s: a %s, which this test cannot change", f.Name, v.Kind())
				}
				v.SetString(v.String() + "x")
			})
		})
	}
	for what, f := range cases {
		inc := build()
		f(&inc)
		d := Mismatch(inc, build())
		if d == "" {
			t.Errorf("%s: Mismatch sees no difference", what)
		} else if strings.HasPrefix(what, "port") || strings.HasPrefix(what, "rare") || what == "a port less" {
			if !strings.Contains(d, "port "+name) {
				t.Errorf("%s: Mismatch = %q, which does not name port %s", what, d, name)
			}
		}
	}
}
