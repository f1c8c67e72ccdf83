package statetext

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/ovn-sync/ovn-sync/state"
)

// TestEveryField sets every field of Switch, Port and DHCPOptions and reads it back, so
// that a field added to state fails here until Print and Parse know it.
func TestEveryField(t *testing.T) {
	sw := &state.Switch{}
	fill(t, reflect.ValueOf(sw).Elem())
	p := &state.Port{}
	fill(t, reflect.ValueOf(p).Elem())
	r := &state.Rare{}
	fill(t, reflect.ValueOf(r).Elem())
	p.SetRare(r)
	d := &state.DHCPOptions{}
	fill(t, reflect.ValueOf(d).Elem())
	s := state.New(1)
	s.Switches[sw.Name] = sw
	s.Ports.Set(p.Name, p)
	s.DHCP[d.Name] = d
	text := Print(s)
	got, err := Parse(text)
	if err != nil {
		t.Fatalf("Parse(%q) = %v", text, err)
	}
	if !state.DeepEqual(got, s) {
		t.Errorf("Parse(Print(s)) = %+v, %+v, %+v\nwant %+v, %+v, %+v\ntext:\n%s",
			*got.Switches[sw.Name], *got.Ports.Get(p.Name), got.DHCP[d.Name], *sw, *p, *d, text)
	}
}

// fill gives each field of the struct v a value of its own; port_security
// differs from addresses so that both are printed.
func fill(t *testing.T, v reflect.Value) {
	t.Helper()
	for i := range v.NumField() {
		f, name := v.Field(i), v.Type().Field(i).Name
		switch {
		case v.Type() == reflect.TypeFor[state.Port]() && f.Type() == reflect.TypeFor[*state.Rare]():
			// Filled apart, by the caller.
		case f.Kind() == reflect.String:
			f.SetString(strings.ToLower(name) + "-value")
		case f.Type() == reflect.TypeFor[[]string]():
			f.Set(reflect.ValueOf([]string{name + " 1", name + " 2"}))
		case f.Type() == reflect.TypeFor[map[string]string]():
			f.Set(reflect.ValueOf(map[string]string{name + "-1": name + " 1", name + "-2": "2"}))
		default:
			t.Fatalf("%s.%s is a %s: teach statetext to print and parse it", v.Type(), name, f.Type())
		}
	}
}

func TestPrint(t *testing.T) {
	s := state.New(0)
	for _, sw := range []*state.Switch{
		{Name: "ovn-default", Owner: "ovn-sync", Network: "default", Subnet: "10.16.0.0/16", IPv6Prefix: "fd00::/64"},
		{Name: "admin", UUID: "ls-2"},
	} {
		s.Switches[sw.Name] = sw
	}
	for _, p := range []*state.Port{
		(&state.Port{Name: "web.default", Switch: "ovn-default", Owner: "Pod/default/web", Network: "default",
			Addresses: []string{"0a:58:0a:10:00:02 10.16.0.2"}, PortSecurity: []string{"0a:58:0a:10:00:02 10.16.0.2"},
			RequestedChassis: "n1,n2"}).SetRare(&state.Rare{ActivationStrategy: "rarp"}),
		{Name: "a.default", UUID: "lsp-1", Switch: "ovn-default", Owner: "Pod/default/a", Network: "default",
			Addresses: []string{"a"}, PortSecurity: []string{"b"}},
		{Name: "open", Addresses: []string{"router"}},
		(&state.Port{Name: "dyn", Addresses: []string{"dynamic"}, PortSecurity: []string{"dynamic"}}).
			SetRare(&state.Rare{DynamicAddresses: "0a:00:00:00:00:01 10.16.0.6"}),
		{Name: "odd name", Owner: `say "hi"`, Addresses: []string{"none"}, PortSecurity: []string{"none"}},
		{Name: "literal-none", Addresses: []string{"a"}, PortSecurity: []string{"none"}},
		{Name: "bare"},
		(&state.Port{Name: "vm.default", Switch: "ovn-default", Owner: "VirtualMachine/default/vm", Network: "default",
			Addresses: []string{"a"}, PortSecurity: []string{"a"}}).
			SetRare(&state.Rare{DHCPv4: "ovn-default/ipv4", DHCPv6: "ovn-default/ipv6"}),
	} {
		s.Ports.Set(p.Name, p)
	}
	s.DHCP["ovn-default/ipv4"] = &state.DHCPOptions{Name: "ovn-default/ipv4", UUID: "d-1", Owner: "ovn-sync", Network: "default",
		CIDR: "10.16.0.0/16", Options: map[string]string{"server_id": "10.16.0.1", "lease_time": "3600", "dns_server": "{10.96.0.10, 1.1.1.1}"}}
	want := `switch admin uuid=ls-2
switch ovn-default owner=ovn-sync network=default subnet=10.16.0.0/16 ipv6_prefix=fd00::/64
dhcp ovn-default/ipv4 uuid=d-1 owner=ovn-sync network=default cidr=10.16.0.0/16 option:dns_server="{10.96.0.10, 1.1.1.1}" option:lease_time=3600 option:server_id=10.16.0.1
port a.default uuid=lsp-1 switch=ovn-default owner=Pod/default/a network=default addresses="a" port_security="b"
port bare
port dyn addresses="dynamic" dynamic="0a:00:00:00:00:01 10.16.0.6"
port literal-none addresses="a" port_security="none"
port "odd name" owner="say \"hi\"" addresses="none"
port open addresses="router" port_security=none
port vm.default switch=ovn-default owner=VirtualMachine/default/vm network=default addresses="a" dhcpv4=ovn-default/ipv4 dhcpv6=ovn-default/ipv6
port web.default switch=ovn-default owner=Pod/default/web network=default addresses="0a:58:0a:10:00:02 10.16.0.2" requested-chassis=n1,n2 activation-strategy=rarp
`
	got := Print(s)
	if got != want {
		t.Errorf("Print = \n%s\nwant\n%s", got, want)
	}
	back, err := Parse(got)
	if err != nil {
		t.Fatalf("Parse(Print(s)) = %v", err)
	}
	if again := Print(back); again != got {
		t.Errorf("Print(Parse(Print(s))) = \n%s\nwant\n%s", again, got)
	}
	if !equal(back, s) {
		t.Errorf("Parse(Print(s)) differs from s:\n%s", Print(back))
	}
}

// equal compares as the tests that use Parse do: every field, UUIDs and
// dynamic addresses included, nil and empty lists alike.
func equal(a, b state.State) bool {
	if len(a.Switches) != len(b.Switches) || a.Ports.Len() != b.Ports.Len() || len(a.DHCP) != len(b.DHCP) {
		return false
	}
	for k, x := range a.DHCP {
		y, ok := b.DHCP[k]
		if !ok || !x.Equal(y) || x.UUID != y.UUID {
			return false
		}
	}
	for k, x := range a.Switches {
		y, ok := b.Switches[k]
		if !ok || !x.Equal(y) || x.UUID != y.UUID {
			return false
		}
	}
	for k, x := range a.Ports.All() {
		y, ok := b.Ports.Lookup(k)
		if !ok || !x.Equal(y) || x.UUID != y.UUID || x.DynamicAddresses() != y.DynamicAddresses() {
			return false
		}
	}
	return true
}

func TestParse(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want string // Print of the result, or the error
	}{{
		in: `
# comments and blank lines are skipped; keys come in any order
	port p  addresses="x y"	owner=Pod/ns/p   switch=s
switch s
`,
		want: "switch s\nport p switch=s owner=Pod/ns/p addresses=\"x y\"\n",
	}, {
		in:   `port p addresses="a" addresses="b" port_security="b"`,
		want: "port p addresses=\"a\" addresses=\"b\" port_security=\"b\"\n",
	}, {
		in:   `port p addresses="a" port_security=none`,
		want: "port p addresses=\"a\" port_security=none\n",
	}, {
		in:   `port "a b" network="" uuid=u`,
		want: "port \"a b\" uuid=u\n",
	}, {
		in:   `router r`,
		want: `line 1 "router r": want "switch NAME ...", "dhcp NAME ..." or "port NAME ..."`,
	}, {
		in:   "\nport",
		want: `line 2 "port": port without a name`,
	}, {
		in:   `switch s ipv6=fd00::/64`,
		want: `line 1 "switch s ipv6=fd00::/64": unknown key "ipv6"`,
	}, {
		in:   `port p chassis=n1`,
		want: `line 1 "port p chassis=n1": unknown key "chassis"`,
	}, {
		in:   `port p owner=a owner=b`,
		want: `line 1 "port p owner=a owner=b": owner twice`,
	}, {
		in:   "port p\nport p",
		want: `line 2 "port p": port "p" twice`,
	}, {
		in:   `port p addresses="a" port_security=none port_security="a"`,
		want: `line 1 "port p addresses=\"a\" port_security=none port_security=\"a\"": port_security=none beside other entries`,
	}, {
		in:   `port p addresses="a`,
		want: `line 1 "port p addresses=\"a": addresses: "a: invalid syntax`,
	}, {
		in:   `port p addresses="a"b`,
		want: `line 1 "port p addresses=\"a\"b": addresses: "a"b: text right after a quoted value`,
	}, {
		in:   `port p owner=a"b`,
		want: `line 1 "port p owner=a\"b": owner: a"b: a double quote inside a bare value`,
	}, {
		in:   `port p rarp`,
		want: `line 1 "port p rarp": "rarp": want key=value`,
	}} {
		s, err := Parse(tt.in)
		got := Print(s)
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("Parse(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func ExamplePrint() {
	s := state.New(1)
	s.Switches["ovn-default"] = &state.Switch{Name: "ovn-default", Owner: "ovn-sync", Network: "default", Subnet: "10.16.0.0/16"}
	addr := []string{"0a:58:0a:10:00:02 10.16.0.2"}
	s.Ports.Set("web.default", &state.Port{Name: "web.default", Switch: "ovn-default", Owner: "Pod/default/web",
		Network: "default", Addresses: addr, PortSecurity: addr, RequestedChassis: "node-1"})
	fmt.Print(Print(s))
	// Output:
	// switch ovn-default owner=ovn-sync network=default subnet=10.16.0.0/16
	// port web.default switch=ovn-default owner=Pod/default/web network=default addresses="0a:58:0a:10:00:02 10.16.0.2" requested-chassis=node-1
}
