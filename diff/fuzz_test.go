package diff

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/ovn-sync/ovn-sync/internal/statetext"
	"github.com/ovn-sync/ovn-sync/state"
)

// FuzzComputeApply draws a want and a have state from the fuzzer's bytes:
// owned and foreign switches and ports over a few shared names, foreign
// ports with addresses and no switch, and foreign keys in the options and
// external_ids of every observed row. It checks that carrying out the plan
// converges on want for every row ovn-sync may touch (Compute over the
// result is empty), that no foreign row is changed, and, on a model of the
// NB that keeps the keys state.Port does not represent, that no change
// writes a key that is not ours and that every row the plan does not
// delete keeps its foreign keys. `go test` runs the seeds under
// testdata/fuzz/FuzzComputeApply; `go test -fuzz FuzzComputeApply ./diff/`
// searches further.
func FuzzComputeApply(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x01\x01\x01\x02\x01\x01\x01\x01\x02\x02\x01\x01\x00\x03"))
	f.Fuzz(func(t *testing.T, data []byte) {
		d := &draws{b: data}
		have, extras := d.state(true)
		want, _ := d.state(false)
		policy := Policy{WithholdDeletes: d.n(5) == 0}

		p := Compute(want, have, policy)
		if msg := checkApplied(want, have, p); msg != "" {
			t.Fatalf("%s\nwant:\n%s\nhave:\n%s\nplan:\n%s", msg, statetext.Print(want), statetext.Print(have), p)
		}
		checkForeignKeys(t, have, extras, p)

		// The result of a full plan is a fixed point: Compute over it with
		// the same want finds nothing more.
		if !policy.WithholdDeletes {
			res := p.ApplyTo(have)
			if q := Compute(want, res, Policy{}); !q.Empty() {
				t.Fatalf("Compute(want, ApplyTo(have)) = %s, want no changes", q)
			}
		}
	})
}

// extra holds, per observed row, the keys of options and external_ids that
// are someone else's: state values do not carry them, so the test keeps
// them beside the state to check nothing writes or drops them.
type extra struct {
	options, externalIDs map[string]string
}

// ourPortKeys and ourSwitchKeys are every map key a change may write.
var (
	ourPortKeys = map[string]bool{
		"options:" + state.OptRequestedChassis: true, "options:" + state.OptActivationStrategy: true,
		"external_ids:" + state.KeyOwner: true, "external_ids:" + state.KeyNetwork: true, "external_ids:" + state.KeySwitch: true,
	}
	ourSwitchKeys = map[string]bool{
		"external_ids:" + state.KeyOwner: true, "external_ids:" + state.KeyNetwork: true,
		"other_config:" + state.SwitchSubnet: true, "other_config:" + state.SwitchIPv6Prefix: true,
		"other_config:" + state.SwitchExcludeIPs: true,
	}
	// foreignKeys look like ours on purpose: a prefix, a suffix, another
	// tool's namespace.
	foreignKeys = []string{"foo", "ovn-sync/other", "requested-chassis-x", "other-tool", "iface-id-ver", "ovn-sync", "mcast_flood"}
)

// checkForeignKeys carries p out on a model of the NB with foreign keys and
// fails t if a change names a key or column that is not ours, or if a row
// the plan keeps loses or changes a foreign key.
func checkForeignKeys(t *testing.T, have state.State, extras map[string]extra, p Plan) {
	t.Helper()
	nb := make(map[string]extra, len(extras))
	for k, e := range extras {
		nb[k] = extra{options: maps.Clone(e.options), externalIDs: maps.Clone(e.externalIDs)}
	}
	for i := range p.Changes {
		c := &p.Changes[i]
		key := rowKey(c.Kind, c.Name)
		switch c.Action {
		case Create:
			if _, ok := nb[key]; ok && rowExists(have, c.Kind, c.Name) && !deletedBefore(p, i, c.Kind, c.Name) {
				t.Fatalf("create %s %q over an existing row", c.Kind, c.Name)
			}
			nb[key] = extra{}
		case Delete:
			delete(nb, key)
		case Update:
			allowed, ourKeys := PortFields, ourPortKeys
			if c.Kind == KindSwitch {
				allowed, ourKeys = SwitchFields, ourSwitchKeys
			}
			if c.Fields&^allowed != 0 {
				t.Fatalf("update %s %q writes fields %v, not all of them the kind's", c.Kind, c.Name, c.Fields)
			}
			e := nb[key]
			for g := range c.Fields.All() {
				col, k := g.Column()
				if k == "" {
					if col != "addresses" && col != "port_security" {
						t.Fatalf("update %s %q writes the whole column %q", c.Kind, c.Name, col)
					}
					continue
				}
				if !ourKeys[col+":"+k] {
					t.Fatalf("update %s %q writes %s:%s, which is not ours", c.Kind, c.Name, col, k)
				}
				// A write of our key leaves every other key as it was.
				if col == "options" && e.options != nil {
					delete(e.options, k)
				}
				if col == "external_ids" && e.externalIDs != nil {
					delete(e.externalIDs, k)
				}
			}
		}
	}
	for key, before := range extras {
		after, ok := nb[key]
		kind, name := splitRowKey(key)
		if !ok {
			if !rowOwned(have, kind, name) {
				t.Fatalf("foreign row %s was deleted", key)
			}
			continue
		}
		if wasRecreated(p, kind, name) {
			continue // a move: the old row and its keys are gone by design
		}
		if !maps.Equal(before.options, after.options) || !maps.Equal(before.externalIDs, after.externalIDs) {
			t.Fatalf("row %s: foreign keys %v/%v became %v/%v", key, before.options, before.externalIDs, after.options, after.externalIDs)
		}
	}
}

func rowKey(k Kind, name string) string { return k.String() + " " + name }

func splitRowKey(key string) (Kind, string) {
	for _, k := range []Kind{KindSwitch, KindPort} {
		if p := k.String() + " "; len(key) > len(p) && key[:len(p)] == p {
			return k, key[len(p):]
		}
	}
	return 0, key
}

func rowExists(s state.State, k Kind, name string) bool {
	if k == KindPort {
		_, ok := s.Ports.Lookup(name)
		return ok
	}
	_, ok := s.Switches[name]
	return ok
}

func rowOwned(s state.State, k Kind, name string) bool {
	if k == KindPort {
		p, ok := s.Ports.Lookup(name)
		return ok && p.Owned()
	}
	sw, ok := s.Switches[name]
	return ok && sw.Owned()
}

func deletedBefore(p Plan, i int, k Kind, name string) bool {
	return slices.ContainsFunc(p.Changes[:i], func(c Change) bool { return c.Action == Delete && c.Kind == k && c.Name == name })
}

func wasRecreated(p Plan, k Kind, name string) bool {
	return slices.ContainsFunc(p.Changes, func(c Change) bool { return c.Action == Create && c.Kind == k && c.Name == name })
}

// draws hands out small choices from the fuzzer's bytes; past the end
// every choice is 0.
type draws struct {
	b []byte
	i int
}

func (d *draws) n(k int) int {
	if d.i >= len(d.b) {
		return 0
	}
	v := int(d.b[d.i]) % k
	d.i++
	return v
}

func (d *draws) pick(values ...string) string { return values[d.n(len(values))] }

var (
	fuzzSwitches = []string{"sw0", "sw1", "sw2", "ovn-default"}
	fuzzPorts    = []string{"a.ns", "b.ns", "c.ns", "d.ns", "e.ns", "f.ns", "router", "k8s-node1"}
	fuzzAddrs    = [][]string{nil, {"0a:58:0a:10:00:02 10.16.0.2"}, {"0a:58:0a:10:00:03 10.16.0.3"}, {"router"}, {"dynamic"},
		{"0a:58:0a:10:00:02 10.16.0.2", "0a:58:0a:10:00:03 10.16.0.3"}, {"02:00:00:00:00:01 10.16.0.2 fd00::2"}, {""}}
)

// state draws a state over the shared names so that want and have overlap.
// An observed state carries UUIDs, foreign rows (ports without a switch),
// and foreign keys on any row; a desired one holds owned ports (rarely one
// without an owner, which Compute must refuse) and may name switches it
// does not own.
func (d *draws) state(observed bool) (state.State, map[string]extra) {
	s := state.New(len(fuzzPorts))
	extras := map[string]extra{}
	foreign := func(key string) {
		if !observed {
			return
		}
		var e extra
		for range d.n(3) {
			if e.options == nil {
				e.options = map[string]string{}
			}
			e.options[d.pick(foreignKeys...)] = d.pick("bar", "x", "true", "n1")
		}
		for range d.n(3) {
			if e.externalIDs == nil {
				e.externalIDs = map[string]string{}
			}
			e.externalIDs[d.pick(foreignKeys...)] = d.pick("x", "Pod/ns/a", "", "ünïcode")
		}
		extras[key] = e
	}
	for i, name := range fuzzSwitches {
		kind := d.n(3) // absent, ours, someone else's
		if kind == 0 {
			continue
		}
		sw := &state.Switch{Name: name}
		if kind == 1 {
			sw.Owner = d.pick("ovn-sync", "NetworkAttachmentDefinition/ns/n")
			sw.Network = d.pick("", "default", "ns/n")
			sw.Subnet = d.pick("", "10.16.0.0/16", "10.1.0.0/24")
			sw.IPv6Prefix = d.pick("", "fd00::/64")
			sw.ExcludeIPs = d.pick("", "10.16.0.1", "10.16.0.1 10.16.0.5..10.16.0.9")
		}
		if observed {
			sw.UUID = fmt.Sprintf("ls-%d", i)
		}
		s.Switches[name] = sw
		foreign(rowKey(KindSwitch, name))
	}
	for i, name := range fuzzPorts {
		kind := d.n(3) // absent, ours, someone else's (observed) or ownerless (desired, rarely)
		if kind == 0 {
			continue
		}
		p := &state.Port{Name: name}
		p.Addresses = fuzzAddrs[d.n(len(fuzzAddrs))]
		p.PortSecurity = p.Addresses
		if d.n(4) == 0 {
			p.PortSecurity = fuzzAddrs[d.n(len(fuzzAddrs))]
		}
		owned := kind == 1 || !observed && d.n(8) != 0
		if owned {
			p.Owner = d.pick("Pod/ns/"+name, "VirtualMachine/ns/x", "VirtualMachineInstance/ns/x")
			p.Network = d.pick("default", "", "ns/n")
			p.Switch = d.pick(append([]string{""}, fuzzSwitches...)...)
			p.RequestedChassis = d.pick("", "n1", "n1,n2")
			p.EditRare(func(r *state.Rare) { r.ActivationStrategy = d.pick("", "rarp") })
		} else if observed {
			p.EditRare(func(r *state.Rare) { r.DynamicAddresses = d.pick("", "0a:58:0a:10:00:04 10.16.0.4") })
		}
		if observed {
			p.UUID = fmt.Sprintf("lsp-%d", i)
		}
		s.Ports.Set(name, p)
		foreign(rowKey(KindPort, name))
	}
	if d.n(2) == 0 {
		s.Index = state.IndexPorts(s.Ports)
	}
	return s, extras
}
