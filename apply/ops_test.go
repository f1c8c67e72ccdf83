package apply

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ovn-org/libovsdb/ovsdb"

	"github.com/ovn-sync/ovn-sync/diff"
	"github.com/ovn-sync/ovn-sync/state"
)

// allTxns returns every transaction of plan in the order Apply sends them,
// with the UUIDs of created switches given.
func allTxns(t *testing.T, plan diff.Plan, created map[string]string, max int) []txn {
	t.Helper()
	txns := switchTxns(plan, max)
	r := refs{created: map[string]string{}, observed: plan.DHCPUUIDs}
	for i := range plan.Changes {
		if c := &plan.Changes[i]; c.Kind == diff.KindDHCP && c.Action == diff.Create {
			r.created[c.Name] = "NEW-" + c.Name
		}
	}
	deletes, upserts, err := portTxns(plan, created, r, max)
	if err != nil {
		t.Fatalf("portTxns: %v", err)
	}
	txns = append(append(txns, slices.Collect(deletes)...), slices.Collect(upserts)...)
	txns = append(txns, dhcpDeleteTxns(plan, max)...)
	return append(txns, switchDeleteTxns(plan)...)
}

func port(name, sw, owner, addr, chassis string) *state.Port {
	p := &state.Port{Name: name, Switch: sw, Owner: owner, Network: state.DefaultNetwork, RequestedChassis: chassis}
	if addr != "" {
		p.Addresses = []string{addr}
		p.PortSecurity = p.Addresses
	}
	return p
}

// withUUID returns p as the NB would hold it, under uuid.
func withUUID(p *state.Port, uuid string) *state.Port {
	q := *p
	q.UUID = uuid
	return &q
}

func TestOps(t *testing.T) {
	sw := &state.Switch{Name: "ovn-default", UUID: "LS1", Owner: "ovn-sync", Network: "default", Subnet: "10.16.0.0/16"}
	foreignSw := &state.Switch{Name: "admin", UUID: "LS2"}
	net1 := &state.Switch{Name: "net1.ns", Owner: "NetworkAttachmentDefinition/ns/net1", Network: "ns/net1", Subnet: "10.1.0.0/24"}
	a := port("a.default", "ovn-default", "Pod/default/a", "0a:58:0a:10:00:02 10.16.0.2", "n1")
	b := port("b.default", "ovn-default", "Pod/default/b", "0a:58:0a:10:00:03 10.16.0.3", "n1")
	c := port("c.ns.net1.ns.ovn", "net1.ns", "Pod/ns/c", "0a:58:0a:01:00:02 10.1.0.2", "")
	d := port("d.default", "admin", "Pod/default/d", "", "n2")
	vm := port("vm.default", "ovn-default", "VirtualMachine/default/vm", "0a:58:0a:10:00:04 10.16.0.4", "n1,n2")
	vm.EditRare(func(r *state.Rare) { r.ActivationStrategy = "rarp" })
	vmBefore := withUUID(port("vm.default", "ovn-default", "VirtualMachineInstance/default/vm", "0a:58:0a:10:00:05 10.16.0.5", "n1"), "LSP-vm")

	for _, tt := range []struct {
		name       string
		want, have state.State
		max        int
		out        string
	}{{
		name: "creates: N inserts and one ports mutate per switch, the new switch's UUID from phase 1",
		want: st([]*state.Switch{sw, foreignSw, net1}, a, b, c, d),
		have: st([]*state.Switch{sw, foreignSw}),
		max:  1000,
		out: `txn 0
  wait Logical_Switch where name=="net1.ns" columns [name] until != [{name="net1.ns"}] timeout 0
  insert Logical_Switch {external_ids={"ovn-sync/network"="ns/net1" "ovn-sync/owner"="NetworkAttachmentDefinition/ns/net1"} name="net1.ns" other_config={"subnet"="10.1.0.0/24"} ports=[]}
txn 1
  insert Logical_Switch_Port as lsp0 {addresses=["0a:58:0a:10:00:02 10.16.0.2"] dhcpv4_options=[] dhcpv6_options=[] external_ids={"ovn-sync/network"="default" "ovn-sync/owner"="Pod/default/a" "ovn-sync/switch"="ovn-default"} name="a.default" options={"requested-chassis"="n1"} port_security=["0a:58:0a:10:00:02 10.16.0.2"]}
  insert Logical_Switch_Port as lsp1 {addresses=["0a:58:0a:10:00:03 10.16.0.3"] dhcpv4_options=[] dhcpv6_options=[] external_ids={"ovn-sync/network"="default" "ovn-sync/owner"="Pod/default/b" "ovn-sync/switch"="ovn-default"} name="b.default" options={"requested-chassis"="n1"} port_security=["0a:58:0a:10:00:03 10.16.0.3"]}
  insert Logical_Switch_Port as lsp2 {addresses=["0a:58:0a:01:00:02 10.1.0.2"] dhcpv4_options=[] dhcpv6_options=[] external_ids={"ovn-sync/network"="default" "ovn-sync/owner"="Pod/ns/c" "ovn-sync/switch"="net1.ns"} name="c.ns.net1.ns.ovn" port_security=["0a:58:0a:01:00:02 10.1.0.2"]}
  insert Logical_Switch_Port as lsp3 {addresses=[] dhcpv4_options=[] dhcpv6_options=[] external_ids={"ovn-sync/network"="default" "ovn-sync/owner"="Pod/default/d" "ovn-sync/switch"="admin"} name="d.default" options={"requested-chassis"="n2"} port_security=[]}
  mutate Logical_Switch where _uuid==LS1: ports insert [lsp0 lsp1]
  mutate Logical_Switch where _uuid==NEW-net1.ns: ports insert [lsp2]
  mutate Logical_Switch where _uuid==LS2: ports insert [lsp3]
`,
	}, {
		name: "creates split at the limit: each batch has its own switch mutate",
		want: st([]*state.Switch{sw}, a, b, vm),
		have: st([]*state.Switch{sw}),
		max:  3,
		out: `txn 0
  insert Logical_Switch_Port as lsp0 {addresses=["0a:58:0a:10:00:02 10.16.0.2"] dhcpv4_options=[] dhcpv6_options=[] external_ids={"ovn-sync/network"="default" "ovn-sync/owner"="Pod/default/a" "ovn-sync/switch"="ovn-default"} name="a.default" options={"requested-chassis"="n1"} port_security=["0a:58:0a:10:00:02 10.16.0.2"]}
  insert Logical_Switch_Port as lsp1 {addresses=["0a:58:0a:10:00:03 10.16.0.3"] dhcpv4_options=[] dhcpv6_options=[] external_ids={"ovn-sync/network"="default" "ovn-sync/owner"="Pod/default/b" "ovn-sync/switch"="ovn-default"} name="b.default" options={"requested-chassis"="n1"} port_security=["0a:58:0a:10:00:03 10.16.0.3"]}
  mutate Logical_Switch where _uuid==LS1: ports insert [lsp0 lsp1]
txn 1
  insert Logical_Switch_Port as lsp0 {addresses=["0a:58:0a:10:00:04 10.16.0.4"] dhcpv4_options=[] dhcpv6_options=[] external_ids={"ovn-sync/network"="default" "ovn-sync/owner"="VirtualMachine/default/vm" "ovn-sync/switch"="ovn-default"} name="vm.default" options={"activation-strategy"="rarp" "requested-chassis"="n1,n2"} port_security=["0a:58:0a:10:00:04 10.16.0.4"]}
  mutate Logical_Switch where _uuid==LS1: ports insert [lsp0]
`,
	}, {
		name: "update: one mutate, sets guarded by their old value, map keys deleted then inserted",
		want: st([]*state.Switch{sw}, vm),
		have: st([]*state.Switch{sw}, vmBefore),
		max:  1000,
		out: `txn 0
  mutate Logical_Switch_Port where _uuid==LSP-vm and addresses==["0a:58:0a:10:00:05 10.16.0.5"] and port_security==["0a:58:0a:10:00:05 10.16.0.5"]: addresses delete ["0a:58:0a:10:00:05 10.16.0.5"], addresses insert ["0a:58:0a:10:00:04 10.16.0.4"], port_security delete ["0a:58:0a:10:00:05 10.16.0.5"], port_security insert ["0a:58:0a:10:00:04 10.16.0.4"], options delete ["requested-chassis" "activation-strategy"], options insert {"activation-strategy"="rarp" "requested-chassis"="n1,n2"}, external_ids delete ["ovn-sync/owner"], external_ids insert {"ovn-sync/owner"="VirtualMachine/default/vm"}
`,
	}, {
		name: "update removing keys: delete by key, no insert",
		want: st([]*state.Switch{sw}, port("vm.default", "ovn-default", "VirtualMachine/default/vm", "x", "")),
		have: st([]*state.Switch{sw}, func() *state.Port {
			p := withUUID(port("vm.default", "ovn-default", "VirtualMachine/default/vm", "x", "n1,n2"), "LSP-vm")
			p.EditRare(func(r *state.Rare) { r.ActivationStrategy = "rarp" })
			return p
		}()),
		max: 1000,
		out: `txn 0
  mutate Logical_Switch_Port where _uuid==LSP-vm: options delete ["requested-chassis" "activation-strategy"]
`,
	}, {
		name: "deletes: one ports delete per switch; an unknown switch found by includes",
		want: st([]*state.Switch{sw, foreignSw}),
		have: st([]*state.Switch{sw, foreignSw},
			withUUID(a, "LSP-a"), withUUID(b, "LSP-b"), withUUID(d, "LSP-d"),
			withUUID(port("e.default", "gone", "Pod/default/e", "", ""), "LSP-e"),
			&state.Port{Name: "router", UUID: "LSP-r"}),
		max: 1000,
		out: `txn 0
  mutate Logical_Switch where ports includes [LSP-e]: ports delete [LSP-e]
  mutate Logical_Switch where _uuid==LS1: ports delete [LSP-a LSP-b]
  mutate Logical_Switch where _uuid==LS2: ports delete [LSP-d]
`,
	}, {
		name: "a move: delete in one transaction, create in a later one; then the switch delete",
		want: st([]*state.Switch{sw}, a),
		have: st([]*state.Switch{sw, {Name: "old", UUID: "LS3", Owner: "ovn-sync"}},
			withUUID(port("a.default", "old", "Pod/default/a", "0a:58:0a:10:00:02 10.16.0.2", "n1"), "LSP-a")),
		max: 1000,
		out: `txn 0
  mutate Logical_Switch where _uuid==LS3: ports delete [LSP-a]
txn 1
  insert Logical_Switch_Port as lsp0 {addresses=["0a:58:0a:10:00:02 10.16.0.2"] dhcpv4_options=[] dhcpv6_options=[] external_ids={"ovn-sync/network"="default" "ovn-sync/owner"="Pod/default/a" "ovn-sync/switch"="ovn-default"} name="a.default" options={"requested-chassis"="n1"} port_security=["0a:58:0a:10:00:02 10.16.0.2"]}
  mutate Logical_Switch where _uuid==LS1: ports insert [lsp0]
txn 2
  wait Logical_Switch where _uuid==LS3 columns [ports] until == [{ports=[]}] timeout 0
  delete Logical_Switch where _uuid==LS3 and ports==[]
`,
	}, {
		name: "switch update: only our keys, key by key",
		want: st([]*state.Switch{{Name: "ovn-default", Owner: "ovn-sync", Network: "default", IPv6Prefix: "fd00::/64"}}),
		have: st([]*state.Switch{sw}),
		max:  1000,
		out: `txn 0
  mutate Logical_Switch where _uuid==LS1: other_config delete ["subnet" "ipv6_prefix"], other_config insert {"ipv6_prefix"="fd00::/64"}
`,
	}, {
		name: "DHCP: rows created in phase 1, ports refer to them by UUID; a row updated key by key; a row gone after its ports",
		want: func() state.State {
			s := st([]*state.Switch{sw}, func() *state.Port { p := *a; return p.EditRare(func(r *state.Rare) { r.DHCPv4 = "ovn-default/ipv4" }) }(),
				func() *state.Port { p := *b; return p.EditRare(func(r *state.Rare) { r.DHCPv6 = "ovn-default/ipv6" }) }())
			s.DHCP["ovn-default/ipv4"] = &state.DHCPOptions{Name: "ovn-default/ipv4", Owner: "ovn-sync", Network: "default", CIDR: "10.16.0.0/16",
				Options: map[string]string{"lease_time": "3600", "router": "10.16.0.1", "server_id": "10.16.0.1", "server_mac": "02:00:00:00:00:01"}}
			s.DHCP["ovn-default/ipv6"] = &state.DHCPOptions{Name: "ovn-default/ipv6", Owner: "ovn-sync", Network: "default", CIDR: "fd00::/64",
				Options: map[string]string{"server_id": "02:00:00:00:00:01"}}
			return s
		}(),
		have: func() state.State {
			s := st([]*state.Switch{sw}, withUUID(a, "LSP-a"), func() *state.Port {
				return withUUID(b, "LSP-b").EditRare(func(r *state.Rare) { r.DHCPv6 = "dhcp-foreign" })
			}())
			s.DHCP["ovn-default/ipv6"] = &state.DHCPOptions{Name: "ovn-default/ipv6", UUID: "DH6", Owner: "ovn-sync", Network: "default", CIDR: "fd00::/64",
				Options: map[string]string{"server_id": "02:00:00:00:00:02", "dns_server": "fd00::53"}}
			s.DHCP["gone/ipv4"] = &state.DHCPOptions{Name: "gone/ipv4", UUID: "DH-gone", Owner: "ovn-sync", Network: "ns/gone", CIDR: "10.9.0.0/24"}
			return s
		}(),
		max: 1000,
		out: `txn 0
  insert DHCP_Options {cidr="10.16.0.0/16" external_ids={"ovn-sync/dhcp"="ovn-default/ipv4" "ovn-sync/network"="default" "ovn-sync/owner"="ovn-sync"} options={"lease_time"="3600" "router"="10.16.0.1" "server_id"="10.16.0.1" "server_mac"="02:00:00:00:00:01"}}
  mutate DHCP_Options where _uuid==DH6: options delete ["server_id" "dns_server"], options insert {"server_id"="02:00:00:00:00:01"}
txn 1
  update Logical_Switch_Port where _uuid==LSP-a and dhcpv4_options==[] {dhcpv4_options=[NEW-ovn-default/ipv4]}
  update Logical_Switch_Port where _uuid==LSP-b and dhcpv6_options==[dhcp-foreign] {dhcpv6_options=[DH6]}
txn 2
  delete DHCP_Options where _uuid==DH-gone
`,
	}, {
		name: "no changes, no transactions",
		want: st([]*state.Switch{sw}, a),
		have: st([]*state.Switch{sw}, withUUID(a, "LSP-a")),
		max:  1000,
		out:  ``,
	}} {
		t.Run(tt.name, func(t *testing.T) {
			plan := diff.Compute(tt.want, tt.have, diff.Policy{})
			created := map[string]string{}
			for name := range tt.want.Switches {
				created[name] = "NEW-" + name
			}
			got := renderTxns(allTxns(t, plan, created, tt.max))
			if got != tt.out {
				t.Errorf("ops for plan\n%s\n= %s\nwant %s", plan, got, tt.out)
			}
		})
	}
}

func st(switches []*state.Switch, ports ...*state.Port) state.State {
	s := state.New(len(ports))
	for _, sw := range switches {
		s.Switches[sw.Name] = sw
	}
	for _, p := range ports {
		s.Ports.Set(p.Name, p)
	}
	return s
}

// TestBatches checks the transaction rules on plans of every size against
// limits small and large: at most max operations, one mutate per switch,
// no row addressed twice, named UUIDs defined before use in the same
// transaction, deletes before creates, and every change exactly once.
func TestBatches(t *testing.T) {
	for _, n := range []int{1, 7, 250, 2500} {
		for _, max := range []int{2, 3, 10, 1000} {
			want, have := state.New(n), state.New(n)
			for i := range 4 {
				sw := &state.Switch{Name: fmt.Sprint("sw", i), Owner: "ovn-sync"}
				want.Switches[sw.Name] = sw
				if i < 3 {
					o := *sw
					o.UUID = fmt.Sprint("LS", i)
					have.Switches[sw.Name] = &o
				}
			}
			// Of each five ports: one kept, one updated, one deleted,
			// one created, one moved.
			for i := range n {
				name := fmt.Sprint("p", i)
				sw := fmt.Sprint("sw", i%4)
				p := port(name, sw, "Pod/ns/"+name, fmt.Sprint("addr", i), "n1")
				o := withUUID(p, fmt.Sprint("LSP", i))
				switch i % 5 {
				case 0:
					want.Ports.Set(name, p)
					have.Ports.Set(name, o)
				case 1:
					want.Ports.Set(name, port(name, sw, "Pod/ns/"+name, fmt.Sprint("addr", i), "n2"))
					have.Ports.Set(name, o)
				case 2:
					have.Ports.Set(name, o)
				case 3:
					want.Ports.Set(name, p)
				case 4:
					want.Ports.Set(name, p)
					have.Ports.Set(name, withUUID(port(name, fmt.Sprint("sw", (i+1)%3), "Pod/ns/"+name, "x", ""), fmt.Sprint("LSP", i)))
				}
			}
			plan := diff.Compute(want, have, diff.Policy{})
			txns := allTxns(t, plan, map[string]string{"sw3": "LS3"}, max)
			if err := checkTxns(plan, txns, max); err != nil {
				t.Errorf("%d ports, max %d: %v", n, max, err)
			}
		}
	}
}

func checkTxns(plan diff.Plan, txns []txn, max int) error {
	c := plan.Counts()
	var created, updated, deleted int
	sawCreate := false
	for i, t := range txns {
		if len(t.ops) > max {
			return fmt.Errorf("txn %d has %d ops, more than %d", i, len(t.ops), max)
		}
		if len(t.ops) != len(t.expect) {
			return fmt.Errorf("txn %d has %d ops but %d expectations", i, len(t.ops), len(t.expect))
		}
		rows := map[string]bool{}
		named := map[string]bool{}
		for j, op := range t.ops {
			var row string
			switch {
			case op.Op == ovsdb.OperationInsert:
				row = op.Table + " name " + op.Row[colName].(string)
				if op.UUIDName != "" {
					named[op.UUIDName] = true
				}
			case op.Op == ovsdb.OperationWait:
				continue
			case op.Where[0].Column == colUUID:
				row = op.Table + " " + op.Where[0].Value.(ovsdb.UUID).GoUUID
			default:
				row = op.Table + " " + render(op)
			}
			if op.Op == ovsdb.OperationDelete {
				row = op.Table + " " + op.Where[0].Value.(ovsdb.UUID).GoUUID
			}
			if rows[row] && op.Op != ovsdb.OperationDelete {
				return fmt.Errorf("txn %d op %d addresses %s a second time", i, j, row)
			}
			rows[row] = true
			for _, m := range op.Mutations {
				if m.Column != colPorts || m.Mutator != ovsdb.MutateOperationInsert {
					continue
				}
				for _, u := range m.Value.(ovsdb.OvsSet).GoSet {
					if id := u.(ovsdb.UUID).GoUUID; !named[id] {
						return fmt.Errorf("txn %d op %d references %s, not inserted earlier in the txn", i, j, id)
					}
				}
				sawCreate = true
			}
			if m := op.Mutations; len(m) > 0 && m[0].Column == colPorts && m[0].Mutator == ovsdb.MutateOperationDelete && sawCreate {
				return fmt.Errorf("txn %d deletes ports after a txn that created some", i)
			}
		}
		created += t.created
		updated += t.updated
		deleted += t.deleted
	}
	if created != c.Add || updated != c.Change || deleted != c.Destroy {
		return fmt.Errorf("txns carry %d creates, %d updates, %d deletes; the plan has %+v", created, updated, deleted, c)
	}
	return nil
}

func TestPortTxnsUnknownSwitch(t *testing.T) {
	plan := diff.Plan{Changes: []diff.Change{{
		Action: diff.Create, Kind: diff.KindPort, Name: "p", After: &state.Port{Name: "p", Switch: "nowhere"},
	}}}
	_, _, err := portTxns(plan, nil, refs{}, 1000)
	if err == nil || !strings.Contains(err.Error(), `switch "nowhere" has no UUID`) {
		t.Errorf("portTxns(create on a switch without UUID) = %v, want an error naming the switch", err)
	}
}
