package observed

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/ovn-org/libovsdb/cache"
	"github.com/ovn-org/libovsdb/client"
	"github.com/ovn-org/libovsdb/model"
	"github.com/ovn-org/libovsdb/ovsdb"

	"github.com/ovn-sync/ovn-sync/internal/nbtest"
	"github.com/ovn-sync/ovn-sync/nbdb"
	"github.com/ovn-sync/ovn-sync/state"
)

// TestStateVersionIncremental sends random batches of inserts, updates and
// deletes of ports (ours and not, with and without references to
// DHCP_Options rows, renamed, and a name passed from one row to another),
// switches (some sharing a name) and DHCP_Options rows (ours, some sharing
// a name, and not) to a real ovsdb-server, restores an older backup and
// restarts the server on the way. After each batch, once the view and the
// cache have seen it, StateVersion's snapshot is the one a client of
// libovsdb's generic cache reads from its rows (the port view and
// libovsdb decode the same NB alike), its version moved if the snapshot
// did, and every snapshot handed out before is as it was.
func TestStateVersionIncremental(t *testing.T) {
	srv, nb, w, seed := startWriter(t)

	type handedOut struct {
		s, copy state.State
		v       uint64
	}
	var history []handedOut
	known := 0 // comparisons of two snapshots ChangedPorts knew of
	const batches = 300
	var backup []byte
	for batch := range batches {
		switch batch {
		case 100:
			backup = srv.Backup()
		case 150: // rows come and go while the client reconnects
			srv.Restore(backup)
			w.sync()
		case 220:
			srv.Restart()
			w.sync()
		}
		switch batch {
		case 40: // so many ports change at once that every row is read
			var ops []ovsdb.Operation
			for range 1100 {
				ops = append(ops, w.addPort()...)
			}
			w.send(ops)
		case 41: // and go
			var ops []ovsdb.Operation
			for _, u := range w.uuids(nbdb.LogicalSwitchPortTable) {
				ops = append(ops, deletePort(u))
			}
			w.send(ops)
		default:
			w.send(w.randomBatch())
		}
		w.sync()

		got, v := nb.StateVersion()
		if want, ok := w.reference(got); !ok {
			t.Fatalf("batch %d (seed %d): StateVersion() differs from libovsdb's cache of the same NB: %s", batch, seed, stateDiff(got, want))
		}
		if n := len(history); n > 0 {
			last := history[n-1]
			if v == last.v && !sameSnapshot(got, last.s) {
				t.Fatalf("batch %d: StateVersion() returned another snapshot under version %d", batch, v)
			}
		}
		// Every port that differs from an earlier snapshot is named, when
		// ChangedPorts knows.
		for i := max(0, len(history)-5); i < len(history); i++ {
			h := history[i]
			names, ok := nb.ChangedPorts(h.v, v)
			if !ok {
				continue
			}
			known++
			for _, name := range changedPorts(h.s, got) {
				if !slices.Contains(names, name) {
					t.Fatalf("batch %d (seed %d): port %s changed since version %d, and ChangedPorts(%d, %d) = %q does not name it", batch, seed, name, h.v, h.v, v, names)
				}
			}
		}
		history = append(history, handedOut{s: got, copy: deepCopy(got), v: v})
		// The snapshots of the last batches now, every one at the end.
		for i := max(0, len(history)-3); i < len(history); i++ {
			if h := history[i]; !state.DeepEqual(h.s, h.copy) {
				t.Fatalf("batch %d (seed %d): the snapshot of batch %d changed since it was handed out: %s", batch, seed, i, stateDiff(h.s, h.copy))
			}
		}
	}
	for i, h := range history {
		if !state.DeepEqual(h.s, h.copy) {
			t.Fatalf("seed %d: the snapshot of batch %d changed since it was handed out: %s", seed, i, stateDiff(h.s, h.copy))
		}
	}
	nb.mu.Lock()
	rebuilds := nb.rebuilds
	nb.mu.Unlock()
	t.Logf("%d of %d snapshots read every row; %d ports, %d switches, %d DHCP_Options rows at the end",
		rebuilds, batches, history[batches-1].s.Ports.Len(), len(history[batches-1].s.Switches), len(history[batches-1].s.DHCP))
	// The first snapshot, the big batches, the reconnects, and the few
	// times a port's name passed to another row read everything; if many
	// more did, the incremental path went untested.
	if rebuilds > batches/5 {
		t.Errorf("%d of %d snapshots read every row", rebuilds, batches)
	}
	if known < 3*batches {
		t.Errorf("ChangedPorts knew %d of about %d comparisons", known, 5*batches)
	}
}

// changedPorts returns the names of the ports a and b do not hold alike.
func changedPorts(a, b state.State) []string {
	var names []string
	for name, p := range a.Ports.All() {
		if q := b.Ports.Get(name); q == nil || !reflect.DeepEqual(*p, *q) {
			names = append(names, name)
		}
	}
	for name := range b.Ports.All() {
		if a.Ports.Get(name) == nil {
			names = append(names, name)
		}
	}
	return names
}

// TestStateVersionReconnect: a port inserted after a backup is gone once
// the server restarts from the backup and the client reconnects, though
// no event says so: the cache's tables are replaced, and StateVersion
// reads every row.
func TestStateVersionReconnect(t *testing.T) {
	srv := nbtest.Start(t)
	nb := dial(t, srv.Addr(), true)
	w := &writer{t: t, nb: nb, ref: referenceClient(t, srv.Addr()), rng: rand.New(rand.NewPCG(1, 2))}
	w.watchSentinel()
	w.send(w.createSwitch("sentinel"))
	w.send(w.createSwitch("sw0"))
	w.send(w.addPort())
	w.sync()
	nb.StateVersion()
	backup := srv.Backup()
	w.send(w.addPort())
	w.sync()
	if s, _ := nb.StateVersion(); s.Ports.Len() != 2 {
		t.Fatalf("StateVersion() has %d ports, want 2", s.Ports.Len())
	}
	srv.Restore(backup)
	w.sync()
	got, _ := nb.StateVersion()
	if want, ok := w.reference(got); got.Ports.Len() != 1 || !ok {
		t.Fatalf("after the server restarted from a backup of one port: %s", stateDiff(got, want))
	}
}

// reference returns the state libovsdb's generic cache of the writer's
// reference client holds, read as observed reads rows: once it equals got
// (the cache follows the server on its own), or after 5s with false.
func (w *writer) reference(got state.State) (state.State, bool) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		want := cacheState(w.ref.Cache())
		if state.DeepEqual(got, want) {
			return want, true
		}
		if time.Now().After(deadline) {
			return want, false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// cacheState reads a snapshot from libovsdb's cache of every column of
// the three tables, with the conversions of rows portFromRowNamed,
// SwitchFromRow and DHCPFromRow, sets in order (the view keeps them
// sorted; libovsdb appends what an update adds).
func cacheState(tc *cache.TableCache) state.State {
	var ref NB
	s := state.State{Ports: state.NewPorts(0)}
	s.DHCP, _ = ref.readDHCP(tc.Table(nbdb.DHCPOptionsTable))
	name := func(uuid string) string { return ref.dhcpNames[uuid] }
	var idx state.Entries
	for _, row := range tc.Table(nbdb.LogicalSwitchPortTable).RowsShallow() {
		p := portFromRowNamed(row.(*nbdb.LogicalSwitchPort), name)
		p.Addresses, p.PortSecurity = sortedOrNil(p.Addresses), sortedOrNil(p.PortSecurity)
		s.Ports.Set(p.Name, p)
		idx = append(idx, state.EntryOf(p))
	}
	idx.Sort()
	s.Index = state.IndexOf(idx)
	switches := map[string]memoSwitch{}
	for uuid, row := range tc.Table(nbdb.LogicalSwitchTable).RowsShallow() {
		switches[uuid] = memoSwitch{row: row, sw: SwitchFromRow(row.(*nbdb.LogicalSwitch))}
	}
	s.Switches = switchesByName(switches)
	return s
}

// sortedOrNil is s sorted, nil when empty, as the view holds sets.
func sortedOrNil(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return slices.Sorted(slices.Values(s))
}

// sameSnapshot reports whether a and b share their maps and Index.
func sameSnapshot(a, b state.State) bool {
	same := func(x, y any) bool { return reflect.ValueOf(x).UnsafePointer() == reflect.ValueOf(y).UnsafePointer() }
	return a.Ports == b.Ports && same(a.Switches, b.Switches) && same(a.DHCP, b.DHCP) &&
		a.Index == b.Index
}

// deepCopy returns s with every map, slice and row of its own.
func deepCopy(s state.State) state.State {
	c := s // and what else it records
	c.Switches, c.Ports, c.DHCP = map[string]*state.Switch{}, state.NewPorts(s.Ports.Len()), map[string]*state.DHCPOptions{}
	for k, v := range s.Switches {
		sw := *v
		c.Switches[k] = &sw
	}
	ports := map[*state.Port]*state.Port{}
	cp := func(p *state.Port) *state.Port {
		if q := ports[p]; q != nil {
			return q
		}
		q := *p
		q.Addresses, q.PortSecurity = slices.Clone(p.Addresses), slices.Clone(p.PortSecurity)
		ports[p] = &q
		return &q
	}
	for k, v := range s.Ports.All() {
		c.Ports.Set(k, cp(v))
	}
	for k, v := range s.DHCP {
		d := *v
		d.Options = maps.Clone(v.Options)
		c.DHCP[k] = &d
	}
	es := s.Index.Entries()
	for i, e := range es {
		e.Port = cp(e.Port)
		es[i] = e
	}
	c.Index = state.IndexOf(es)
	return c
}

// stateDiff names what differs between got and want.
func stateDiff(got, want state.State) string {
	var out []string
	for _, kind := range []struct {
		name      string
		got, want any
	}{{"switch", got.Switches, want.Switches}, {"port", got.Ports.Map(), want.Ports.Map()}, {"DHCP_Options", got.DHCP, want.DHCP}} {
		g, w := reflect.ValueOf(kind.got), reflect.ValueOf(kind.want)
		for _, k := range w.MapKeys() {
			if gv := g.MapIndex(k); !gv.IsValid() {
				out = append(out, fmt.Sprintf("%s %v missing", kind.name, k))
			} else if !reflect.DeepEqual(gv.Interface(), w.MapIndex(k).Interface()) {
				out = append(out, fmt.Sprintf("%s %v is %+v, want %+v", kind.name, k, gv.Elem().Interface(), w.MapIndex(k).Elem().Interface()))
			}
		}
		for _, k := range g.MapKeys() {
			if !w.MapIndex(k).IsValid() {
				out = append(out, fmt.Sprintf("%s %v not wanted", kind.name, k))
			}
		}
	}
	if gi, wi := got.Index.Entries(), want.Index.Entries(); !reflect.DeepEqual(gi, wi) {
		out = append(out, fmt.Sprintf("Index of %d entries, want %d", len(gi), len(wi)))
		for i := range min(len(gi), len(wi)) {
			if g, w := gi[i], wi[i]; !reflect.DeepEqual(g, w) {
				out = append(out, fmt.Sprintf("Index[%d] is %+v (port %+v), want %+v (port %+v)", i, g, *g.Port, w, *w.Port))
				break
			}
		}
	}
	if g, w := got.OwnedPorts(), want.OwnedPorts(); g != w {
		out = append(out, fmt.Sprintf("%d ports of ours, want %d", g, w))
	}
	if len(out) == 0 {
		return "equal but for what else the snapshots record"
	}
	if len(out) > 10 {
		out = append(out[:10], "...")
	}
	return fmt.Sprint(out)
}

// writer makes random changes to an NB through nb, picking the rows it
// changes from the cache of ref, a libovsdb client of its own that monitors
// every column of the tables nb reads.
type writer struct {
	t   *testing.T
	nb  *NB
	ref client.Client
	rng *rand.Rand
	// named counts the rows and names made, for unique ones.
	named int
	// seq is the last value written to the sentinel switch; seenNB and
	// seenRef the last one nb's and ref's cache event handlers saw.
	seq             int
	seenNB, seenRef atomic.Int64
	note            chan struct{}
}

// uuids returns the UUIDs of table's rows in nb's cache, sorted, so that a
// seed picks the same rows again.
func (w *writer) uuids(table string) []string {
	return slices.Sorted(maps.Keys(w.ref.Cache().Table(table).RowsShallow()))
}

func (w *writer) name(prefix string) string {
	w.named++
	return fmt.Sprintf("%s%d", prefix, w.named)
}

// switchName is one of few, so that two switches share one now and then.
func (w *writer) switchName() string { return fmt.Sprintf("sw%d", w.rng.IntN(4)) }

func (w *writer) create(m model.Model) []ovsdb.Operation {
	ops, err := w.nb.client.Create(m)
	if err != nil {
		w.t.Fatal(err)
	}
	return ops
}

func (w *writer) update(m model.Model, fields ...any) []ovsdb.Operation {
	ops, err := w.nb.client.Where(m).Update(m, fields...)
	if err != nil {
		w.t.Fatal(err)
	}
	return ops
}

func uuidCond(uuid string) ovsdb.Condition {
	return ovsdb.NewCondition("_uuid", ovsdb.ConditionEqual, ovsdb.UUID{GoUUID: uuid})
}

// createSwitch inserts a switch, ours half the time.
func (w *writer) createSwitch(name string) []ovsdb.Operation {
	sw := &nbdb.LogicalSwitch{UUID: w.name("ls"), Name: name, ExternalIDs: map[string]string{"x": w.name("")}}
	if w.rng.IntN(2) == 0 {
		sw.ExternalIDs[state.KeyOwner] = "ovn-sync"
		sw.ExternalIDs[state.KeyNetwork] = name
		sw.OtherConfig = map[string]string{state.SwitchSubnet: fmt.Sprintf("10.%d.0.0/16", w.rng.IntN(256))}
	}
	return w.create(sw)
}

// port returns a random port named name: ours or not (half of the rest
// kube-ovn's), with static or dynamic addresses, options, and references
// to DHCP_Options rows, ours or not, now and then.
func (w *writer) port(uuid, name string) *nbdb.LogicalSwitchPort {
	p := &nbdb.LogicalSwitchPort{UUID: uuid, Name: name, ExternalIDs: map[string]string{"x": w.name("")}, Options: map[string]string{}}
	addr := fmt.Sprintf("0a:58:0a:10:%02x:%02x 10.16.%d.%d", w.rng.IntN(256), w.rng.IntN(256), w.rng.IntN(256), w.rng.IntN(256))
	switch w.rng.IntN(3) {
	case 0:
		p.Addresses, p.PortSecurity = []string{addr}, []string{addr}
	case 1:
		p.Addresses, p.DynamicAddresses = []string{"dynamic"}, &addr
	}
	switch w.rng.IntN(4) {
	case 0, 1:
		p.ExternalIDs[state.KeyOwner] = "Pod/ns/" + name
		p.ExternalIDs[state.KeyNetwork] = state.DefaultNetwork
		p.ExternalIDs[state.KeySwitch] = w.switchName()
	case 2:
		p.ExternalIDs[state.KeyVendor] = state.VendorKubeOVN
		p.ExternalIDs[state.KeyVendorSwitch] = w.switchName()
	}
	if w.rng.IntN(2) == 0 {
		p.Options[state.OptRequestedChassis] = fmt.Sprintf("node-%d", w.rng.IntN(3))
		if w.rng.IntN(3) == 0 {
			p.Options[state.OptActivationStrategy] = "rarp"
		}
	}
	if dhcp := w.uuids(nbdb.DHCPOptionsTable); len(dhcp) > 0 {
		if w.rng.IntN(2) == 0 {
			p.Dhcpv4Options = &dhcp[w.rng.IntN(len(dhcp))]
		}
		if w.rng.IntN(3) == 0 {
			p.Dhcpv6Options = &dhcp[w.rng.IntN(len(dhcp))]
		}
	}
	return p
}

// portFields are the columns an update of a port writes.
func portFields(p *nbdb.LogicalSwitchPort) []any {
	return []any{&p.Name, &p.Addresses, &p.PortSecurity, &p.DynamicAddresses, &p.ExternalIDs, &p.Options, &p.Dhcpv4Options, &p.Dhcpv6Options}
}

// addPort inserts a port named afresh on a random switch, if there is one
// (but the sentinel).
func (w *writer) addPort() []ovsdb.Operation {
	sws := w.switches("")
	if len(sws) == 0 {
		return nil
	}
	p := w.port(w.name("lsp"), w.name("p"))
	return w.addPortTo(sws[w.rng.IntN(len(sws))], p)
}

func (w *writer) addPortTo(sw string, p *nbdb.LogicalSwitchPort) []ovsdb.Operation {
	return append(w.create(p), ovsdb.Operation{Op: ovsdb.OperationMutate, Table: nbdb.LogicalSwitchTable,
		Where:     []ovsdb.Condition{uuidCond(sw)},
		Mutations: []ovsdb.Mutation{{Column: "ports", Mutator: ovsdb.MutateOperationInsert, Value: ovsdb.UUID{GoUUID: p.UUID}}}})
}

// deletePort takes the port out of whichever switch holds it, which
// deletes it.
func deletePort(uuid string) ovsdb.Operation {
	return ovsdb.Operation{Op: ovsdb.OperationMutate, Table: nbdb.LogicalSwitchTable,
		Where:     []ovsdb.Condition{ovsdb.NewCondition("ports", ovsdb.ConditionIncludes, ovsdb.UUID{GoUUID: uuid})},
		Mutations: []ovsdb.Mutation{{Column: "ports", Mutator: ovsdb.MutateOperationDelete, Value: ovsdb.UUID{GoUUID: uuid}}}}
}

// switches returns the UUIDs of the switches named name, or, with name
// "", of all but the sentinel, sorted.
func (w *writer) switches(name string) []string {
	var uuids []string
	for u, row := range w.ref.Cache().Table(nbdb.LogicalSwitchTable).RowsShallow() {
		if n := row.(*nbdb.LogicalSwitch).Name; n == name || name == "" && n != "sentinel" {
			uuids = append(uuids, u)
		}
	}
	slices.Sort(uuids)
	return uuids
}

// randomBatch returns the operations of one to six random changes, each
// to rows of its own.
func (w *writer) randomBatch() []ovsdb.Operation {
	var ops []ovsdb.Operation
	used := map[string]bool{}
	// pick returns a row of uuids no change of the batch touched yet, or "".
	pick := func(uuids []string) string {
		for range 3 {
			if len(uuids) == 0 {
				return ""
			}
			if u := uuids[w.rng.IntN(len(uuids))]; !used[u] {
				used[u] = true
				return u
			}
		}
		return ""
	}
	ports, sws, dhcp := w.uuids(nbdb.LogicalSwitchPortTable), w.switches(""), w.uuids(nbdb.DHCPOptionsTable)
	for range 1 + w.rng.IntN(6) {
		switch w.rng.IntN(12) {
		case 0, 1, 2:
			ops = append(ops, w.addPort()...)
		case 3, 4: // a port changes, and is renamed now and then
			if u := pick(ports); u != "" {
				name := w.ref.Cache().Table(nbdb.LogicalSwitchPortTable).Row(u).(*nbdb.LogicalSwitchPort).Name
				if w.rng.IntN(4) == 0 {
					name = w.name("p")
				}
				p := w.port(u, name)
				ops = append(ops, w.update(p, portFields(p)...)...)
			}
		case 5:
			if u := pick(ports); u != "" {
				ops = append(ops, deletePort(u))
			}
		case 6: // a port's name passes to a new row
			if u, sw := pick(ports), pick(sws); u != "" && sw != "" {
				name := w.ref.Cache().Table(nbdb.LogicalSwitchPortTable).Row(u).(*nbdb.LogicalSwitchPort).Name
				ops = append(ops, deletePort(u))
				ops = append(ops, w.addPortTo(sw, w.port(w.name("lsp"), name))...)
			}
		case 7:
			ops = append(ops, w.createSwitch(w.switchName())...)
		case 8:
			if u := pick(sws); u != "" {
				if w.rng.IntN(3) == 0 { // its ports go with it
					ops = append(ops, ovsdb.Operation{Op: ovsdb.OperationDelete, Table: nbdb.LogicalSwitchTable, Where: []ovsdb.Condition{uuidCond(u)}})
				} else {
					sw := &nbdb.LogicalSwitch{UUID: u, Name: w.switchName(), ExternalIDs: map[string]string{state.KeyOwner: "ovn-sync"},
						OtherConfig: map[string]string{state.SwitchSubnet: fmt.Sprintf("10.%d.0.0/16", w.rng.IntN(256))}}
					if w.rng.IntN(3) == 0 {
						sw.ExternalIDs = nil
					}
					ops = append(ops, w.update(sw, &sw.Name, &sw.ExternalIDs, &sw.OtherConfig)...)
				}
			}
		case 9:
			ops = append(ops, w.create(w.dhcp(w.name("dhcp")))...)
		case 10: // renamed, edited, or no longer ours
			if u := pick(dhcp); u != "" {
				d := w.dhcp(u)
				ops = append(ops, w.update(d, &d.Cidr, &d.Options, &d.ExternalIDs)...)
			}
		case 11: // ports' references to it go with it
			if u := pick(dhcp); u != "" {
				ops = append(ops, ovsdb.Operation{Op: ovsdb.OperationDelete, Table: nbdb.DHCPOptionsTable, Where: []ovsdb.Condition{uuidCond(u)}})
			}
		}
	}
	return ops
}

// dhcp returns a random DHCP_Options row: ours under one of few names (so
// two rows share one now and then), or not ours.
func (w *writer) dhcp(uuid string) *nbdb.DHCPOptions {
	d := &nbdb.DHCPOptions{UUID: uuid, Cidr: fmt.Sprintf("10.%d.0.0/16", w.rng.IntN(256)),
		Options:     map[string]string{"lease_time": fmt.Sprint(w.rng.IntN(4000))},
		ExternalIDs: map[string]string{state.KeyDHCP: fmt.Sprintf("sw%d/ipv4", w.rng.IntN(3))}}
	if w.rng.IntN(4) != 0 {
		d.ExternalIDs[state.KeyOwner] = "ovn-sync"
		d.ExternalIDs[state.KeyNetwork] = state.DefaultNetwork
	}
	return d
}

// send transacts ops, waiting out a reconnect. Once the sentinel switch
// exists, each transaction also writes a new external_ids:seq to it, and
// send returns once the reference client's cache has seen it: the rows a
// batch picks are then those the NB holds.
func (w *writer) send(ops []ovsdb.Operation) {
	w.t.Helper()
	if len(ops) == 0 {
		return
	}
	if sentinel := w.sentinel(); len(sentinel) == 1 {
		w.seq++
		// Written without the client's API, which reads the cache's model
		// unlocked (a race with a reconnect's purge of the cache).
		ops = append(ops, ovsdb.Operation{Op: ovsdb.OperationUpdate, Table: nbdb.LogicalSwitchTable, Where: []ovsdb.Condition{uuidCond(sentinel[0])},
			Row: ovsdb.Row{"external_ids": ovsdb.OvsMap{GoMap: map[any]any{"seq": fmt.Sprint(w.seq)}}}})
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res, err := w.nb.Transact(ctx, ops...)
		cancel()
		if err == nil {
			_, err = ovsdb.CheckOperationResults(res, ops)
		}
		switch {
		case err == nil:
			w.wait(&w.seenRef, "the reference client's cache")
			return
		case errors.Is(err, client.ErrNotConnected) && time.Now().Before(deadline):
			time.Sleep(50 * time.Millisecond)
		default:
			w.t.Fatalf("transact %d operations: %v", len(ops), err)
		}
	}
}

// sentinel returns the UUIDs of the sentinel switches in nb's cache, which
// shows our transactions once they returned (the reference client's may
// not yet).
func (w *writer) sentinel() []string {
	var uuids []string
	for u, row := range w.nb.client.Cache().Table(nbdb.LogicalSwitchTable).RowsShallow() {
		if row.(*nbdb.LogicalSwitch).Name == "sentinel" {
			uuids = append(uuids, u)
		}
	}
	return uuids
}

// watchSentinel registers, after nb's, a cache event handler that notes
// the sentinel switch's external_ids:seq, and one on the reference
// client's cache. The handlers run in order, event after event: once one
// has seen a value, its cache (and nb's handler) has seen every change
// before. The port view has seen them once Transact returned.
func (w *writer) watchSentinel() {
	w.note = make(chan struct{}, 1)
	watch := func(c client.Client, seen *atomic.Int64) {
		note := func(row model.Model) {
			if sw, ok := row.(*nbdb.LogicalSwitch); ok && sw.Name == "sentinel" {
				var seq int64
				fmt.Sscan(sw.ExternalIDs["seq"], &seq)
				seen.Store(seq)
				select {
				case w.note <- struct{}{}:
				default:
				}
			}
		}
		// A reconnect reloads the cache: the sentinel comes as an add.
		c.Cache().AddEventHandler(&cache.EventHandlerFuncs{
			AddFunc:    func(_ string, row model.Model) { note(row) },
			UpdateFunc: func(_ string, _, row model.Model) { note(row) },
		})
	}
	watch(w.nb.client, &w.seenNB)
	watch(w.ref, &w.seenRef)
}

// wait returns once seen holds the last seq written, or fails the test.
func (w *writer) wait(seen *atomic.Int64, what string) {
	w.t.Helper()
	timeout := time.After(10 * time.Second)
	for seen.Load() < int64(w.seq) {
		select {
		case <-w.note:
		case <-time.After(10 * time.Millisecond):
		case <-timeout:
			w.t.Fatalf("%s did not see change %d of the sentinel", what, w.seq)
		}
	}
}

// sync returns once nb's event handler has seen every change sent before.
func (w *writer) sync() {
	w.t.Helper()
	if n := len(w.sentinel()); n != 1 {
		w.t.Fatalf("%d sentinel switches", n)
	}
	w.send([]ovsdb.Operation{{Op: ovsdb.OperationComment, Comment: ptr("sync")}})
	w.wait(&w.seenNB, "nb's cache event handler")
}

func ptr[T any](v T) *T { return &v }

// TestDropWatch: dropWatch notices libovsdb's cache dropping an event, as
// it does when its queue is full.
func TestDropWatch(t *testing.T) {
	var dropped atomic.Bool
	tc := newTableCache(t, logr.New(&dropWatch{onDrop: func() { dropped.Store(true) }}))
	// Nothing runs the cache's event loop: its queue fills and the
	// 65537th insert's event is dropped.
	rows := map[string]*ovsdb.RowUpdate2{}
	for i := range 1<<16 + 1 {
		rows[fmt.Sprintf("%08x-0000-4000-8000-000000000000", i)] = &ovsdb.RowUpdate2{Insert: &ovsdb.Row{"name": fmt.Sprint("a", i)}}
	}
	if err := tc.Populate2(ovsdb.TableUpdates2{nbdb.AddressSetTable: rows}); err != nil {
		t.Fatal(err)
	}
	if !dropped.Load() {
		t.Errorf("dropWatch did not notice the cache drop an event")
	}
}

// TestStateVersionNamePassed: while the view holds two ports of one name
// (an update that deletes one row and inserts another of its name, read
// half applied), StateVersion reads every row, as rebuild picks one of
// them; once one is gone, the snapshot is the one rebuild makes, whichever
// was picked.
func TestStateVersionNamePassed(t *testing.T) {
	tc := newTableCache(t, logr.Discard())
	// Map order picks the port rebuild keeps: try both, most likely.
	for range 20 {
		var nb NB
		nb.changed.setAll()
		ports := startFakePorts(t, nb.portChanged)
		nb.view = ports.view
		tb := func() tables {
			return tables{ports: nb.view.Table(), switches: tc.Table(nbdb.LogicalSwitchTable), dhcp: tc.Table(nbdb.DHCPOptionsTable)}
		}
		// apply updates the view as an update of the NB would.
		apply := ports.set
		scratch := func() state.State {
			var ref NB
			ref.view = nb.view
			ref.rebuild(tb())
			return ref.last
		}
		uuid := func(i int) string { return fmt.Sprintf("%08x-0000-4000-8000-000000000000", i) }
		apply(uuid(1), "a")
		apply(uuid(2), "b")
		if s, _ := nb.stateOf(tb()); !state.DeepEqual(s, scratch()) {
			t.Fatalf("two ports: %s", stateDiff(s, scratch()))
		}
		apply(uuid(3), "a")
		rebuilds := nb.rebuilds
		if s, _ := nb.stateOf(tb()); nb.rebuilds != rebuilds+1 || s.Ports.Len() != 2 || s.Index.Len() != 3 {
			t.Fatalf("two ports named a: %d rebuilds, then %d; %d ports, %d index entries; want a rebuild, 2 and 3",
				rebuilds, nb.rebuilds, s.Ports.Len(), s.Index.Len())
		}
		apply(uuid(1), "")
		if s, _ := nb.stateOf(tb()); !state.DeepEqual(s, scratch()) {
			t.Fatalf("the first port named a gone: %s", stateDiff(s, scratch()))
		}
	}
}

// TestStateShowsOwnTransaction: a snapshot taken as soon as a transaction
// of ours returns shows it, though the cache's event handler reports its
// rows later: a pass right after the last one's apply must not plan the
// same rows again. Random batches of every kind of change, none waited for.
func TestStateShowsOwnTransaction(t *testing.T) {
	_, nb, w, seed := startWriter(t)
	w.sync()
	nb.StateVersion()
	for batch := range 200 {
		w.send(w.randomBatch())
		got, _ := nb.StateVersion()
		if want, ok := w.reference(got); !ok {
			t.Fatalf("batch %d (seed %d): the snapshot right after our transaction differs from the NB: %s", batch, seed, stateDiff(got, want))
		}
	}
}

// startWriter starts an NB, dials it and returns a writer of random
// changes seeded from the clock, with a sentinel switch (for sync) and
// three switches written.
func startWriter(t *testing.T) (*nbtest.Server, *NB, *writer, uint64) {
	srv := nbtest.Start(t)
	nb := dial(t, srv.Addr(), true)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	w := &writer{t: t, nb: nb, ref: referenceClient(t, srv.Addr()), rng: rand.New(rand.NewPCG(seed, 0))}
	w.watchSentinel()
	w.send(w.createSwitch("sentinel"))
	for range 3 {
		w.send(w.createSwitch(w.switchName()))
	}
	return srv, nb, w, seed
}

// referenceClient connects a libovsdb client to endpoint that monitors
// every column of Logical_Switch_Port, Logical_Switch and DHCP_Options
// into its generic cache, and reconnects when the server comes back.
func referenceClient(t *testing.T, endpoint string) client.Client {
	t.Helper()
	dbModel, err := nbdb.FullDatabaseModel()
	if err != nil {
		t.Fatal(err)
	}
	logger := logr.Discard()
	c, err := client.NewOVSDBClient(dbModel, client.WithEndpoint(endpoint), client.WithReconnect(10*time.Second, reconnectBackoff()),
		client.WithLogger(&logger))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	if _, err := c.Monitor(ctx, c.NewMonitor(client.WithTable(&nbdb.LogicalSwitchPort{}),
		client.WithTable(&nbdb.LogicalSwitch{}), client.WithTable(&nbdb.DHCPOptions{}))); err != nil {
		t.Fatal(err)
	}
	return c
}

// newTableCache returns an empty libovsdb cache of the NB's tables, which
// logs to logger; nothing runs its event loop.
func newTableCache(t testing.TB, logger logr.Logger) *cache.TableCache {
	t.Helper()
	clientModel, err := nbdb.FullDatabaseModel()
	if err != nil {
		t.Fatal(err)
	}
	dbModel, errs := model.NewDatabaseModel(nbdb.Schema(), clientModel)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	tc, err := cache.NewTableCache(dbModel, nil, &logger)
	if err != nil {
		t.Fatal(err)
	}
	return tc
}
