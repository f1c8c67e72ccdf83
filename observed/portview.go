package observed

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ovn-sync/ovn-sync/nbdb"
	"github.com/ovn-sync/ovn-sync/state"
)

// portView is the NB's Logical_Switch_Port table as ovn-sync reads it,
// kept outside libovsdb's generic cache: a monitor of that one table on a
// connection of its own, whose updates are decoded straight from the wire
// into state.Port — only the columns and keys ovn-sync reads, one copy per
// row, the strings that repeat (switch, network, chassis, vendor) shared.
// libovsdb's cache would hold each row as a full nbdb.LogicalSwitchPort
// with two Go maps and index it by name, beside observed's own conversion:
// at 100k ports that was 241 MB of the process's 436 MB live heap.
//
// The connection goes to the endpoint the libovsdb client is connected to
// (the RAFT leader, with LeaderOnly), and moves when the client does. Our
// own transactions go through the client; Barrier then waits until this
// connection has delivered what they changed (see Barrier).
//
// A row the view holds is never changed: an update replaces it. Its
// DHCPv4 and DHCPv6 hold the UUIDs the row refers to; NB names them.
type portView struct {
	// endpoint returns where the client is connected now, "" while down.
	endpoint func() string
	tls      *tls.Config
	// onChange is called with every row an update changes (old nil for an
	// insert, cur nil for a delete), from the reading goroutine, once the
	// update is applied; onReload when the view loaded every row anew.
	onChange func(old, cur *state.Port)
	onReload func()

	mu sync.RWMutex
	// table is nil until the first load and replaced at every reload, so
	// that a reader can tell the rows it read before from a new set.
	table *portTable

	// wmu serializes writes to conn and guards the fields below.
	wmu    sync.Mutex
	conn   net.Conn
	synced bool
	// ready is closed while synced, open (and replaced) while not.
	ready   chan struct{}
	nextID  uint64
	waiting map[uint64]chan error

	// intern shares the strings that repeat across rows; only the
	// reading goroutine uses it.
	intern map[string]string

	stop context.CancelFunc
	done chan struct{}
}

// portTable is one load of the table and the updates applied to it since.
type portTable struct {
	rows map[string]*state.Port // by row UUID
}

// errViewDown: the view's connection is down or not loaded yet.
var errViewDown = errors.New("Logical_Switch_Port monitor not connected")

// lspColumns are the columns the view monitors: the name,
// dynamic_addresses (IPAM reads it) and every port column of state.Fields.
func lspColumns() []string {
	cols := []string{"name", "dynamic_addresses"}
	for i := range state.Fields {
		if f := &state.Fields[i]; (f.PortKey != nil || f.PortSet != nil) && !slices.Contains(cols, f.Column) {
			cols = append(cols, f.Column)
		}
	}
	return cols
}

// startPortView starts following the table and returns once it is loaded,
// or with ctx's error.
func startPortView(ctx context.Context, endpoint func() string, tlsCfg *tls.Config, onChange func(old, cur *state.Port), onReload func()) (*portView, error) {
	runCtx, stop := context.WithCancel(context.Background())
	v := &portView{endpoint: endpoint, tls: tlsCfg, onChange: onChange, onReload: onReload,
		waiting: map[uint64]chan error{}, intern: map[string]string{}, stop: stop, done: make(chan struct{}),
		ready: make(chan struct{})}
	go v.run(runCtx)
	if err := v.waitSynced(ctx); err != nil {
		v.Close()
		return nil, fmt.Errorf("load Logical_Switch_Port: %w", err)
	}
	return v, nil
}

// Close stops following the table.
func (v *portView) Close() {
	v.stop()
	v.wmu.Lock()
	if v.conn != nil {
		v.conn.Close()
	}
	v.wmu.Unlock()
	<-v.done
}

// waitSynced returns once the view is connected and loaded, or with ctx's
// error.
func (v *portView) waitSynced(ctx context.Context) error {
	v.wmu.Lock()
	ready := v.ready
	v.wmu.Unlock()
	select {
	case <-ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Synced reports whether the view is connected and loaded.
func (v *portView) Synced() bool {
	v.wmu.Lock()
	defer v.wmu.Unlock()
	return v.synced
}

// Table returns the current load, nil before the first.
func (v *portView) Table() *portTable {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.table
}

// Row returns the row uuid of t as the view holds it now, nil when it is
// gone or t is not the current load.
func (v *portView) Row(t *portTable, uuid string) *state.Port {
	v.mu.RLock()
	defer v.mu.RUnlock()
	if t != v.table {
		return nil
	}
	return t.rows[uuid]
}

// Each calls f with every row of the current load, which it returns, under
// the view's read lock: f must not call the view.
func (v *portView) Each(f func(uuid string, p *state.Port)) *portTable {
	v.mu.RLock()
	defer v.mu.RUnlock()
	if v.table != nil {
		for uuid, p := range v.table.rows {
			f(uuid, p)
		}
	}
	return v.table
}

// Len is the number of rows loaded.
func (v *portView) Len() int {
	v.mu.RLock()
	defer v.mu.RUnlock()
	if v.table == nil {
		return 0
	}
	return len(v.table.rows)
}

// Barrier returns once the view holds every change the NB committed
// before it was called: it sends an echo on the view's connection and
// waits for the reply. The server answers a connection's requests in
// order and sends a monitor's updates before it reads the next request
// (ovsdb-server flushes a session's monitors before receiving; libovsdb's
// server sends them within the transaction), and the view applies each
// message before it reads the next: so after a transaction of ours
// returned, Barrier makes the view show it. While the view is down it
// waits until it has loaded the table again, which shows every change
// committed before.
func (v *portView) Barrier(ctx context.Context) error {
	if err := v.waitSynced(ctx); err != nil {
		return err
	}
	v.wmu.Lock()
	if v.conn == nil || !v.synced {
		// Down again since: the next load shows it.
		v.wmu.Unlock()
		return v.waitSynced(ctx)
	}
	v.nextID++
	id := v.nextID
	ch := make(chan error, 1)
	v.waiting[id] = ch
	err := v.writeLocked(map[string]any{"id": id, "method": "echo", "params": []string{"barrier"}})
	v.wmu.Unlock()
	if err != nil {
		return err
	}
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		v.wmu.Lock()
		delete(v.waiting, id)
		v.wmu.Unlock()
		return ctx.Err()
	}
}

// writeLocked sends one message; v.wmu is held.
func (v *portView) writeLocked(msg any) error {
	if v.conn == nil {
		return errViewDown
	}
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	v.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, err = v.conn.Write(b)
	return err
}

// run follows the table until ctx is done: it connects to the client's
// endpoint, loads the table and applies its updates, and starts again
// when the connection drops or the client moves to another endpoint.
func (v *portView) run(ctx context.Context) {
	defer close(v.done)
	bo := reconnectBackoff()
	for ctx.Err() == nil {
		ep := v.endpoint()
		if ep == "" {
			sleepCtx(ctx, 50*time.Millisecond)
			continue
		}
		loaded := v.session(ctx, ep)
		if loaded {
			bo.Reset()
		}
		sleepCtx(ctx, bo.NextBackOff())
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// monitorID is the id of the request that starts the monitor.
const monitorID = 0

// session follows the table over one connection to ep until it drops or
// the client leaves ep, and reports whether the table was loaded.
func (v *portView) session(ctx context.Context, ep string) (loaded bool) {
	conn, err := dialEndpoint(ctx, ep, v.tls)
	if err != nil {
		return false
	}
	v.wmu.Lock()
	v.conn = conn
	err = v.writeLocked(map[string]any{"id": monitorID, "method": "monitor_cond", "params": []any{
		nbdb.Schema().Name, "ovn-sync-lsp", map[string]any{nbdb.LogicalSwitchPortTable: map[string]any{"columns": lspColumns(),
			// Spelled out: libovsdb's server has no default.
			"select": map[string]bool{"initial": true, "insert": true, "delete": true, "modify": true}}},
	}})
	v.wmu.Unlock()

	// The connection closes when ctx is done or the client moved.
	quit := make(chan struct{})
	go func() {
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				conn.Close()
				return
			case <-quit:
				return
			case <-t.C:
				if e := v.endpoint(); e != "" && e != ep {
					conn.Close()
					return
				}
			}
		}
	}()
	if err == nil {
		r := newJSONReader(conn)
		for {
			m, err := v.readMessage(r)
			if err != nil {
				break
			}
			if !v.handle(m) {
				break
			}
			loaded = loaded || m.load
		}
	}
	close(quit)
	conn.Close()
	v.wmu.Lock()
	v.conn = nil
	if v.synced {
		v.synced, v.ready = false, make(chan struct{})
	}
	for id, ch := range v.waiting {
		ch <- errViewDown
		delete(v.waiting, id)
	}
	v.wmu.Unlock()
	return loaded
}

// dialEndpoint connects to an OVSDB endpoint: unix:PATH, tcp:HOST:PORT or
// ssl:HOST:PORT.
func dialEndpoint(ctx context.Context, ep string, tlsCfg *tls.Config) (net.Conn, error) {
	scheme, addr, _ := strings.Cut(ep, ":")
	d := net.Dialer{Timeout: 10 * time.Second}
	switch scheme {
	case "unix":
		return d.DialContext(ctx, "unix", addr)
	case "tcp":
		return d.DialContext(ctx, "tcp", addr)
	case "ssl":
		td := tls.Dialer{NetDialer: &d, Config: tlsCfg}
		return td.DialContext(ctx, "tcp", addr)
	}
	return nil, fmt.Errorf("endpoint %q: unknown scheme", ep)
}

// message is one JSON-RPC message as the view reads it.
type message struct {
	id     json.RawMessage
	method string
	// rows are the Logical_Switch_Port changes of an update, or of the
	// monitor's reply (load).
	rows []rowChange
	load bool
	// failed holds a reply's error, when not null.
	failed json.RawMessage
}

// rowChange is one row of an update: the row whole for an initial or
// inserted row, the columns changed for a modified one, neither for a
// deleted one.
type rowChange struct {
	uuid string
	full *state.Port
	diff *rowDiff
}

// rowDiff is a "modify" of update2: each column changed, as the set of
// elements (or map pairs) to toggle; keys ovn-sync does not read are not
// kept.
type rowDiff struct {
	name                  *string
	sets                  [numPortSets][]string
	setChanged            uint8
	dynamic, dhcp4, dhcp6 *[]string
	pairs                 [][2]string // of options and external_ids, by kept key
}

const numPortSets = 2 // addresses, port_security

// readMessage reads one message. The params of an update and the result of
// the monitor's reply are decoded as they are read, never held whole.
func (v *portView) readMessage(r *jsonReader) (message, error) {
	var m message
	err := r.object(func(key []byte) error {
		switch string(key) {
		case "id":
			raw, err := r.raw()
			m.id = raw
			return err
		case "method":
			s, err := r.readString()
			m.method = string(s)
			return err
		case "params":
			if c, err := r.peek(); err != nil || c != '[' {
				return r.skip()
			}
			return r.array(func(i int) error {
				if c, err := r.peek(); err == nil && c == '{' && i >= 1 {
					rows, err := v.readUpdates(r)
					m.rows = append(m.rows, rows...)
					return err
				}
				return r.skip()
			})
		case "result":
			if c, err := r.peek(); err == nil && c == '{' {
				rows, err := v.readUpdates(r)
				m.rows, m.load = rows, true
				return err
			}
			return r.skip()
		case "error":
			if null, err := r.null(); null || err != nil {
				return err
			}
			raw, err := r.raw()
			m.failed = raw
			return err
		}
		return r.skip()
	})
	return m, err
}

// handle acts on one message and reports whether the session goes on.
func (v *portView) handle(m message) bool {
	isRequest := m.method != ""
	switch {
	case isRequest && (m.method == "update2" || m.method == "update3" || m.method == "update"):
		v.apply(m.rows)
		if string(m.id) != "null" && len(m.id) > 0 {
			// libovsdb's server sends updates as requests and waits for
			// the reply, whose result must not be null.
			v.reply(m.id, []string{})
		}
	case isRequest && m.method == "monitor_canceled":
		// The database was replaced (a restore, a schema conversion):
		// load it again.
		return false
	case isRequest && m.method == "echo":
		v.reply(m.id, []string{})
	case isRequest:
		v.replyError(m.id, "unknown method")
	default:
		id, err := strconv.ParseUint(string(m.id), 10, 64)
		if err != nil {
			return true
		}
		if id == monitorID {
			if m.failed != nil {
				return false
			}
			v.load(m.rows)
			return true
		}
		v.wmu.Lock()
		ch := v.waiting[id]
		delete(v.waiting, id)
		v.wmu.Unlock()
		if ch != nil {
			if m.failed != nil {
				ch <- fmt.Errorf("echo: %s", m.failed)
			} else {
				ch <- nil
			}
		}
	}
	return true
}

func (v *portView) reply(id json.RawMessage, result any) {
	v.wmu.Lock()
	defer v.wmu.Unlock()
	v.writeLocked(map[string]any{"id": id, "result": result, "error": nil})
}

func (v *portView) replyError(id json.RawMessage, msg string) {
	if string(id) == "null" || len(id) == 0 {
		return
	}
	v.wmu.Lock()
	defer v.wmu.Unlock()
	v.writeLocked(map[string]any{"id": id, "result": nil, "error": msg})
}

// load replaces the table with the monitor's initial rows.
func (v *portView) load(rows []rowChange) {
	t := &portTable{rows: make(map[string]*state.Port, len(rows))}
	for _, c := range rows {
		if c.full != nil {
			t.rows[c.uuid] = c.full
		}
	}
	v.mu.Lock()
	v.table = t
	v.mu.Unlock()
	v.wmu.Lock()
	if !v.synced {
		v.synced = true
		close(v.ready)
	}
	v.wmu.Unlock()
	if v.onReload != nil {
		v.onReload()
	}
}

// apply applies one update's rows, all at once, then reports them.
func (v *portView) apply(rows []rowChange) {
	type event struct{ old, cur *state.Port }
	events := make([]event, 0, len(rows))
	v.mu.Lock()
	t := v.table
	if t == nil {
		v.mu.Unlock()
		return
	}
	for _, c := range rows {
		old := t.rows[c.uuid]
		var cur *state.Port
		switch {
		case c.full != nil:
			cur = c.full
		case c.diff != nil && old != nil:
			cur = v.modify(old, c.diff)
		}
		if cur == nil {
			delete(t.rows, c.uuid)
		} else {
			t.rows[c.uuid] = cur
		}
		if old != nil || cur != nil {
			events = append(events, event{old, cur})
		}
	}
	v.mu.Unlock()
	if v.onChange != nil {
		for _, e := range events {
			v.onChange(e.old, e.cur)
		}
	}
}

// modify returns old with d applied, as update2's "modify" says: a
// column's new value for a scalar, the elements (pairs) to add or take
// away for a set (map), a pair of a key present with another value
// replacing that value.
func (v *portView) modify(old *state.Port, d *rowDiff) *state.Port {
	p := *old
	if d.name != nil {
		p.Name = *d.name
	}
	for i := range numPortSets {
		if d.setChanged&(1<<i) == 0 {
			continue
		}
		f := portSetField(&p, i)
		s := slices.Clone(*f)
		for _, e := range d.sets[i] {
			if j, found := slices.BinarySearch(s, e); found {
				s = slices.Delete(s, j, j+1)
			} else {
				s = slices.Insert(s, j, e)
			}
		}
		if len(s) == 0 {
			s = nil // as a row read whole holds an empty set
		}
		*f = s
	}
	toggle1 := func(cur *string, diff *[]string) {
		if diff == nil {
			return
		}
		var left []string
		for _, e := range *diff {
			if e != *cur || *cur == "" {
				left = append(left, e)
			}
		}
		if len(left) > 1 {
			// The old value was an empty string, present.
			left = slices.DeleteFunc(left, func(e string) bool { return e == "" })
		}
		*cur = ""
		if len(left) > 0 {
			*cur = left[0]
		}
	}
	toggle1(&p.DynamicAddresses, d.dynamic)
	toggle1(&p.DHCPv4, d.dhcp4)
	toggle1(&p.DHCPv6, d.dhcp6)
	for _, kv := range d.pairs {
		f := portKeyField(&p, kv[0])
		if *f == kv[1] {
			*f = "" // present with the same value: taken away
		} else {
			*f = v.share(kv[0], kv[1])
		}
	}
	return &p
}

// portSetField is where a port keeps set column i: addresses, port_security.
func portSetField(p *state.Port, i int) *[]string {
	if i == 0 {
		return &p.Addresses
	}
	return &p.PortSecurity
}

// keptKeys are the keys of options and external_ids a port keeps, by
// column: those of state.Fields and kube-ovn's two, which adoption reads.
// Each maps to "column\x00key", how a rowDiff and portKeyField name it.
var keptKeys = func() map[string]map[string]string {
	m := map[string]map[string]string{"options": {}, "external_ids": {}}
	keep := func(column, key string) { m[column][key] = column + "\x00" + key }
	keep("external_ids", state.KeyVendor)
	keep("external_ids", state.KeyVendorSwitch)
	for i := range state.Fields {
		if f := &state.Fields[i]; f.PortKey != nil && f.Key != "" {
			keep(f.Column, f.Key)
		}
	}
	return m
}()

// portKeyField is where a port keeps the key "column\x00key" (see keptKeys).
func portKeyField(p *state.Port, ck string) *string {
	column, key, _ := strings.Cut(ck, "\x00")
	switch {
	case column == "external_ids" && key == state.KeyVendor:
		return &p.Vendor
	case column == "external_ids" && key == state.KeyVendorSwitch:
		return &p.VendorSwitch
	}
	for i := range state.Fields {
		if f := &state.Fields[i]; f.PortKey != nil && f.Column == column && f.Key == key {
			return f.PortKey(p)
		}
	}
	panic("observed: key not kept: " + ck)
}

// sharedKeys are the keys whose values repeat across rows: they are
// interned.
var sharedKeys = map[string]bool{
	"external_ids\x00" + state.KeySwitch: true, "external_ids\x00" + state.KeyNetwork: true,
	"external_ids\x00" + state.KeyVendor: true, "external_ids\x00" + state.KeyVendorSwitch: true,
	"options\x00" + state.OptRequestedChassis: true, "options\x00" + state.OptActivationStrategy: true,
}

// share returns val, interned when key's values repeat across rows.
func (v *portView) share(ck, val string) string {
	if !sharedKeys[ck] {
		return val
	}
	if s, ok := v.intern[val]; ok {
		return s
	}
	if len(v.intern) > 1<<16 {
		clear(v.intern)
	}
	v.intern[val] = val
	return val
}

// readUpdates reads a <table-updates2> object, keeping the
// Logical_Switch_Port rows.
func (v *portView) readUpdates(r *jsonReader) ([]rowChange, error) {
	var rows []rowChange
	err := r.object(func(table []byte) error {
		if string(table) != nbdb.LogicalSwitchPortTable {
			return r.skip()
		}
		return r.object(func(uuid []byte) error {
			c := rowChange{uuid: string(uuid)}
			err := r.object(func(op []byte) error {
				switch string(op) {
				case "initial", "insert":
					p, err := v.readRow(r)
					if p != nil {
						p.UUID = c.uuid
					}
					c.full = p
					return err
				case "modify":
					d, err := v.readDiff(r)
					c.diff = d
					return err
				}
				return r.skip() // "delete": null
			})
			rows = append(rows, c)
			return err
		})
	})
	return rows, err
}

// readRow reads a whole row (the columns monitored, default values left
// out) into a port.
func (v *portView) readRow(r *jsonReader) (*state.Port, error) {
	p := &state.Port{}
	err := r.object(func(col []byte) error {
		switch column := string(col); column {
		case "name":
			s, err := r.readString()
			p.Name = string(s)
			return err
		case "dynamic_addresses", "dhcpv4_options", "dhcpv6_options":
			atoms, err := v.readAtoms(r)
			if len(atoms) > 0 {
				*v.refField(p, column) = atoms[0]
			}
			return err
		case "addresses", "port_security":
			atoms, err := v.readAtoms(r)
			slices.Sort(atoms)
			*portSetField(p, setIndex(column)) = atoms
			return err
		case "options", "external_ids":
			return v.readPairs(r, column, func(ck, val string) { *portKeyField(p, ck) = v.share(ck, val) })
		}
		return r.skip()
	})
	// ovn-sync writes one entry to both sets: it is held once.
	for i, e := range p.PortSecurity {
		if j, found := slices.BinarySearch(p.Addresses, e); found {
			p.PortSecurity[i] = p.Addresses[j]
		}
	}
	return p, err
}

// readDiff reads the columns of a "modify".
func (v *portView) readDiff(r *jsonReader) (*rowDiff, error) {
	d := &rowDiff{}
	err := r.object(func(col []byte) error {
		switch column := string(col); column {
		case "name":
			s, err := r.readString()
			name := string(s)
			d.name = &name
			return err
		case "dynamic_addresses", "dhcpv4_options", "dhcpv6_options":
			atoms, err := v.readAtoms(r)
			switch column {
			case "dynamic_addresses":
				d.dynamic = &atoms
			case "dhcpv4_options":
				d.dhcp4 = &atoms
			default:
				d.dhcp6 = &atoms
			}
			return err
		case "addresses", "port_security":
			i := setIndex(column)
			atoms, err := v.readAtoms(r)
			d.sets[i], d.setChanged = atoms, d.setChanged|1<<i
			return err
		case "options", "external_ids":
			return v.readPairs(r, column, func(ck, val string) { d.pairs = append(d.pairs, [2]string{ck, val}) })
		}
		return r.skip()
	})
	return d, err
}

func setIndex(column string) int {
	if column == "addresses" {
		return 0
	}
	return 1
}

// refField is where a port keeps the 0..1 column dynamic_addresses,
// dhcpv4_options or dhcpv6_options.
func (v *portView) refField(p *state.Port, column string) *string {
	switch column {
	case "dynamic_addresses":
		return &p.DynamicAddresses
	case "dhcpv4_options":
		return &p.DHCPv4
	}
	return &p.DHCPv6
}

// readAtoms reads a set of strings or UUIDs: an atom, or ["set", [atoms]].
func (v *portView) readAtoms(r *jsonReader) ([]string, error) {
	c, err := r.peek()
	if err != nil {
		return nil, err
	}
	if c == '"' {
		s, err := r.readString()
		return []string{string(s)}, err
	}
	var out []string
	err = r.tagged(func(tag string) error {
		switch tag {
		case "uuid":
			s, err := r.readString()
			out = append(out, string(s))
			return err
		case "set":
			return r.array(func(int) error {
				a, err := v.readAtoms(r)
				out = append(out, a...)
				return err
			})
		}
		return r.fail(fmt.Errorf("%w: a %q value where a set was expected", errSyntax, tag))
	})
	return out, err
}

// readPairs reads a map, ["map", [[key, value]...]], calling f with each
// pair whose key is kept (see keptKeys).
func (v *portView) readPairs(r *jsonReader, column string, f func(ck, val string)) error {
	keys := keptKeys[column]
	return r.tagged(func(tag string) error {
		if tag != "map" {
			return r.fail(fmt.Errorf("%w: a %q value where a map was expected", errSyntax, tag))
		}
		return r.array(func(int) error {
			var ck string
			return r.array(func(j int) error {
				s, err := r.readString()
				if err != nil {
					return err
				}
				switch {
				case j == 0:
					ck = keys[string(s)]
				case j == 1 && ck != "":
					f(ck, string(s))
				}
				return nil
			})
		})
	})
}
