package observed

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-logr/logr"
	"github.com/ovn-org/libovsdb/cache"
	"github.com/ovn-org/libovsdb/client"
	"github.com/ovn-org/libovsdb/model"
	"github.com/ovn-org/libovsdb/ovsdb"

	"github.com/ovn-sync/ovn-sync/nbdb"
	"github.com/ovn-sync/ovn-sync/state"
)

// Options configures Dial.
type Options struct {
	// Endpoints are OVSDB addresses: unix:PATH, tcp:HOST:PORT or ssl:HOST:PORT.
	// Several endpoints name the members of a RAFT cluster.
	Endpoints []string
	// TLS is required for ssl: endpoints.
	TLS *tls.Config
	// Logger receives libovsdb's logs; nil discards them.
	Logger *logr.Logger
	// LeaderOnly makes the client talk to the RAFT leader only, reconnecting
	// when leadership moves. Dial sets it for real servers; the embedded
	// in-memory server has no _Server database and must run without it.
	LeaderOnly bool
	// ReconnectTimeout bounds each attempt to reconnect after the
	// connection dropped. An attempt monitors again, which reloads every
	// row into the cache and takes as long as Dial did (about 9s at 100k
	// ports on a busy machine); one cut short starts again from scratch, so
	// a bound below that never reconnects. It is also how long an attempt
	// waits on a RAFT member that accepts the connection but does not
	// answer yet, as one rejoining after a restart. Zero means 30s.
	ReconnectTimeout time.Duration
}

// ParseEndpoints splits a --nb value ("unix:/p,tcp:1.2.3.4:6641") into endpoints,
// rejecting anything that is not unix:, tcp: or ssl:.
func ParseEndpoints(s string) ([]string, error) {
	var out []string
	for _, e := range strings.Split(s, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		scheme, rest, ok := strings.Cut(e, ":")
		if !ok || rest == "" || (scheme != "unix" && scheme != "tcp" && scheme != "ssl") {
			return nil, fmt.Errorf("NB endpoint %q: want unix:PATH, tcp:HOST:PORT or ssl:HOST:PORT", e)
		}
		out = append(out, e)
	}
	if len(out) == 0 {
		return nil, errors.New("no NB endpoint given")
	}
	return out, nil
}

// NB is a connected, monitoring NB client.
type NB struct {
	client client.Client

	// dirty is set by the cache's event handler whenever a row of either
	// table changes, and cleared by State before it reads the cache; while it
	// stays clear, State returns last unchanged.
	dirty atomic.Bool
	last  state.State
	// lastPorts, lastSwitches and lastDHCP are the cache tables last was read from.
	// A reconnect that purges the cache replaces the tables and fills the
	// new ones before any transaction can be sent again, but their events
	// reach the handler later: a replaced table alone makes State read anew.
	lastPorts, lastSwitches, lastDHCP *cache.RowCache
	// version counts the snapshots State has built; see StateVersion.
	version uint64

	mu       sync.Mutex
	ports    map[string]memoPort   // by row UUID
	switches map[string]memoSwitch // by row UUID
	// dhcpNames names our DHCP_Options rows by UUID, as the last snapshot
	// read them; dhcpGen counts the snapshots in which that changed, so
	// that a port referring to a DHCP_Options row is converted again then.
	dhcpNames map[string]string
	dhcpGen   uint64
}

type memoPort struct {
	row   model.Model
	entry state.Entry // .Port is the converted row
	// refs is set when the row refers to a DHCP_Options row, gen the
	// dhcpGen it was converted in.
	refs bool
	gen  uint64
}

type memoSwitch struct {
	row model.Model
	sw  *state.Switch
}

// Dial connects to the NB, monitors the tables ovn-sync reads, and returns
// once the initial contents are in the cache. The client reconnects by itself
// (and re-monitors) when the connection drops.
func Dial(ctx context.Context, opts Options) (*NB, error) {
	dbModel, err := nbdb.FullDatabaseModel()
	if err != nil {
		return nil, err
	}
	reconnectTimeout := cmp.Or(opts.ReconnectTimeout, 30*time.Second)
	copts := []client.Option{
		client.WithLeaderOnly(opts.LeaderOnly),
		client.WithReconnect(reconnectTimeout, reconnectBackoff()),
	}
	for _, e := range opts.Endpoints {
		copts = append(copts, client.WithEndpoint(e))
	}
	if opts.TLS != nil {
		copts = append(copts, client.WithTLSConfig(opts.TLS))
	}
	logger := logr.Discard()
	if opts.Logger != nil {
		logger = *opts.Logger
	}
	copts = append(copts, client.WithLogger(&logger))
	c, err := client.NewOVSDBClient(dbModel, copts...)
	if err != nil {
		return nil, err
	}
	if err := c.Connect(ctx); err != nil {
		return nil, fmt.Errorf("connect to NB %s: %w%s", strings.Join(opts.Endpoints, ","), err, tlsRefusal(ctx, opts))
	}
	// Monitor only what the diff reads. Logical_Switch.ports is deliberately
	// left out: every port transaction would ship the whole set back and the
	// cache would clone it, which makes per-port work quadratic.
	lsp := &nbdb.LogicalSwitchPort{}
	ls := &nbdb.LogicalSwitch{}
	dhcp := &nbdb.DHCPOptions{}
	_, err = c.Monitor(ctx, c.NewMonitor(
		client.WithTable(lsp, portColumns(lsp)...),
		client.WithTable(ls, switchColumns(ls)...),
		client.WithTable(dhcp, &dhcp.Cidr, &dhcp.Options, &dhcp.ExternalIDs),
	))
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("monitor NB: %w", err)
	}
	nb := &NB{client: c, ports: map[string]memoPort{}, switches: map[string]memoSwitch{}}
	nb.dirty.Store(true)
	// The cache applies every update before it queues the event, so once the
	// handler has run for a change, the next State sees it; and a dropped
	// event (libovsdb drops when its queue is full) comes after queued ones
	// that still mark the cache dirty.
	mark := func(table string) {
		if table == nbdb.LogicalSwitchPortTable || table == nbdb.LogicalSwitchTable || table == nbdb.DHCPOptionsTable {
			nb.dirty.Store(true)
		}
	}
	c.Cache().AddEventHandler(&cache.EventHandlerFuncs{
		AddFunc:    func(table string, _ model.Model) { mark(table) },
		UpdateFunc: func(table string, _, _ model.Model) { mark(table) },
		DeleteFunc: func(table string, _ model.Model) { mark(table) },
	})
	return nb, nil
}

// tlsRefusal explains a failed connection to an ssl: endpoint whose server
// refused the client's certificate. With TLS 1.3 the client's handshake
// completes before the server checks the client's certificate, so the
// server's alert only reaches whatever reads next, and libovsdb, which
// writes first, often reports a broken pipe or "not connected" instead. A
// fresh handshake followed by a read, with nothing written, gets the alert
// itself. It returns "" when no ssl: endpoint shows such a refusal.
func tlsRefusal(ctx context.Context, opts Options) string {
	for _, e := range opts.Endpoints {
		addr, ok := strings.CutPrefix(e, "ssl:")
		if !ok {
			continue
		}
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		d := tls.Dialer{Config: opts.TLS}
		conn, err := d.DialContext(ctx, "tcp", addr)
		cancel()
		if err != nil {
			continue // the handshake error is the one Connect reported
		}
		_ = conn.SetReadDeadline(time.Now().Add(time.Second))
		_, err = conn.Read(make([]byte, 1))
		conn.Close()
		// The alert is a *net.OpError with Op "remote error" around an
		// unexported type: its text is all there is to match.
		if err != nil && strings.Contains(err.Error(), "remote error: tls:") {
			return fmt.Sprintf(" (%s refused the client certificate: %v)", e, err)
		}
	}
	return ""
}

func reconnectBackoff() backoff.BackOff {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = 100 * time.Millisecond
	b.MaxInterval = 5 * time.Second
	b.MaxElapsedTime = 0 // keep trying; the caller's context bounds the wait
	return b
}

// Client is the underlying libovsdb client, for transactions.
func (nb *NB) Client() client.Client { return nb.client }

// Transact sends ops on the client. It reports a connection lost while the
// call was in flight as client.ErrNotConnected, as libovsdb does for a
// connection closed from this side: libovsdb passes the read error on as it
// is (io.ErrUnexpectedEOF when the server exits, a *net.OpError when it
// resets the connection), and callers retry only on ErrNotConnected. Either
// way the transaction may have committed; a retry then fails on the names
// it creates, which callers treat as a stale plan.
func (nb *NB) Transact(ctx context.Context, ops ...ovsdb.Operation) ([]ovsdb.OperationResult, error) {
	res, err := nb.client.Transact(ctx, ops...)
	if err != nil && connectionLost(err) {
		return nil, fmt.Errorf("%w: %w", client.ErrNotConnected, err)
	}
	return res, err
}

// connectionLost reports whether err is the connection failing under a
// call, rather than the server or the client refusing it.
func connectionLost(err error) bool {
	var opErr *net.OpError
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &opErr)
}

// Connected reports whether the client is connected now.
func (nb *NB) Connected() bool { return nb.client.Connected() }

// Close disconnects.
func (nb *NB) Close() { nb.client.Close() }

// State returns a snapshot of the switches and ports in the cache, with its
// Index. It is safe to call concurrently with cache updates. The snapshot is
// shared: while the cache does not change, every call returns the same one,
// so callers must not modify it (Clone it to make changes).
//
// The snapshot follows the cache by the time libovsdb takes to run its
// event handlers; a pass computed from a snapshot that trails the NB fails
// its transaction (apply.ErrStale) and is computed again.
func (nb *NB) State() state.State {
	s, _ := nb.StateVersion()
	return s
}

// StateVersion is State with the snapshot's version: two calls return the
// same version only if they return the same snapshot, so the version can
// key a desired.Memo.
func (nb *NB) StateVersion() (state.State, uint64) {
	nb.mu.Lock()
	defer nb.mu.Unlock()
	tc := nb.client.Cache()
	portTable, switchTable := tc.Table(nbdb.LogicalSwitchPortTable), tc.Table(nbdb.LogicalSwitchTable)
	dhcpTable := tc.Table(nbdb.DHCPOptionsTable)
	if !nb.dirty.Swap(false) && portTable == nb.lastPorts && switchTable == nb.lastSwitches && dhcpTable == nb.lastDHCP {
		return nb.last, nb.version
	}
	nb.version++
	nb.lastPorts, nb.lastSwitches, nb.lastDHCP = portTable, switchTable, dhcpTable
	portRows := portTable.RowsShallow()
	switchRows := switchTable.RowsShallow()

	s := state.State{Switches: make(map[string]*state.Switch, len(switchRows)), Ports: make(map[string]*state.Port, len(portRows)),
		DHCP: map[string]*state.DHCPOptions{}}
	// DHCP_Options rows are few (one per subnet and family): read them
	// whole every time, before the ports that refer to them.
	// Two rows of one name (an insert retried after its reply was lost)
	// are both ours: the lower UUID keeps the name, the other is read as
	// "<name>#<uuid>", which no pass desires, so the next plan deletes it.
	names := map[string]string{}
	if dhcpTable != nil {
		var rows []*state.DHCPOptions
		for _, row := range dhcpTable.RowsShallow() {
			if d := DHCPFromRow(row.(*nbdb.DHCPOptions)); d != nil {
				rows = append(rows, d)
			}
		}
		slices.SortFunc(rows, func(a, b *state.DHCPOptions) int { return strings.Compare(a.UUID, b.UUID) })
		for _, d := range rows {
			if _, dup := s.DHCP[d.Name]; dup {
				c := *d
				c.Name = d.Name + "#" + d.UUID
				d = &c
			}
			s.DHCP[d.Name] = d
			names[d.UUID] = d.Name
		}
	}
	if !maps.Equal(names, nb.dhcpNames) {
		nb.dhcpNames = names
		nb.dhcpGen++
	}
	name := func(uuid string) string { return nb.dhcpNames[uuid] }
	// The cache replaces a row's model (it clones before updating), so an
	// unchanged pointer means an unchanged row and its conversion is reused.
	ports := make(map[string]memoPort, len(portRows))
	s.Index = make(state.Index, 0, len(portRows))
	for uuid, row := range portRows {
		m, ok := nb.ports[uuid]
		if !ok || m.row != row || m.refs && m.gen != nb.dhcpGen {
			r := row.(*nbdb.LogicalSwitchPort)
			m = memoPort{row: row, entry: state.EntryOf(PortFromRowNamed(r, name)), gen: nb.dhcpGen,
				refs: r.Dhcpv4Options != nil || r.Dhcpv6Options != nil}
		}
		ports[uuid] = m
		s.Ports[m.entry.Port.Name] = m.entry.Port
		s.Index = append(s.Index, m.entry)
	}
	nb.ports = ports
	// Logical_Switch_Port.name is a unique index in the NB schema, so every
	// row has its own entry in s.Ports and s.Index lists each once.
	s.Index.Sort()
	switches := make(map[string]memoSwitch, len(switchRows))
	for uuid, row := range switchRows {
		m, ok := nb.switches[uuid]
		if !ok || m.row != row {
			m = memoSwitch{row: row, sw: SwitchFromRow(row.(*nbdb.LogicalSwitch))}
		}
		switches[uuid] = m
		s.Switches[m.sw.Name] = m.sw
	}
	nb.switches = switches
	nb.last = s
	return s, nb.version
}

// PortFromRow converts an NB row into a state.Port: its name, UUID,
// dynamic_addresses and vendor keys (external_ids:vendor and :ls), and every
// field of state.Fields that ports have, references as the referenced
// rows' UUIDs.
func PortFromRow(r *nbdb.LogicalSwitchPort) *state.Port {
	return PortFromRowNamed(r, func(string) string { return "" })
}

// PortFromRowNamed is PortFromRow with references to a row name gives a
// name for (one of ovn-sync's DHCP_Options rows) held as that name.
func PortFromRowNamed(r *nbdb.LogicalSwitchPort, name func(uuid string) string) *state.Port {
	p := &state.Port{Name: r.Name, UUID: r.UUID}
	for i := range state.Fields {
		switch f := &state.Fields[i]; {
		case f.Ref != "":
			if c := portRef(r, f.Column); c != nil && *c != nil {
				*f.PortKey(p) = cmp.Or(name(**c), **c)
			}
		case f.PortSet != nil:
			if c := portSet(r, f.Column); c != nil {
				*f.PortSet(p) = *c
			}
		case f.PortKey != nil:
			if c := portMap(r, f.Column); c != nil {
				*f.PortKey(p) = (*c)[f.Key]
			}
		}
	}
	if r.DynamicAddresses != nil {
		p.DynamicAddresses = *r.DynamicAddresses
	}
	// external_ids is monitored for our keys; kube-ovn's two are read from it
	// too, for adoption.
	if v := r.ExternalIDs[state.KeyVendor]; v != "" {
		p.Vendor, p.VendorSwitch = v, r.ExternalIDs[state.KeyVendorSwitch]
	}
	return p
}

// DHCPFromRow converts a DHCP_Options row into a state.DHCPOptions, or
// returns nil when the row is not ovn-sync's (no external_ids:ovn-sync/owner
// or no ovn-sync/dhcp name).
func DHCPFromRow(r *nbdb.DHCPOptions) *state.DHCPOptions {
	owner, name := r.ExternalIDs[state.KeyOwner], r.ExternalIDs[state.KeyDHCP]
	if owner == "" || name == "" {
		return nil
	}
	return &state.DHCPOptions{Name: name, UUID: r.UUID, Owner: owner, Network: r.ExternalIDs[state.KeyNetwork],
		CIDR: r.Cidr, Options: r.Options}
}

// SwitchFromRow converts an NB row into a state.Switch: its name, UUID and
// every field of state.Fields that switches have.
func SwitchFromRow(r *nbdb.LogicalSwitch) *state.Switch {
	s := &state.Switch{Name: r.Name, UUID: r.UUID}
	for i := range state.Fields {
		if f := &state.Fields[i]; f.SwitchKey != nil {
			if c := switchMap(r, f.Column); c != nil {
				*f.SwitchKey(s) = (*c)[f.Key]
			}
		}
	}
	return s
}

// portSet, portMap and switchMap return where a row model keeps the set or
// map column a field of state.Fields names, which is where the monitor
// asks for it (portColumns, switchColumns) and where the conversions read
// it; nil for a column they do not know, which observed's tests catch.
func portSet(r *nbdb.LogicalSwitchPort, column string) *[]string {
	switch column {
	case "addresses":
		return &r.Addresses
	case "port_security":
		return &r.PortSecurity
	}
	return nil
}

func portRef(r *nbdb.LogicalSwitchPort, column string) **string {
	switch column {
	case "dhcpv4_options":
		return &r.Dhcpv4Options
	case "dhcpv6_options":
		return &r.Dhcpv6Options
	}
	return nil
}

func portMap(r *nbdb.LogicalSwitchPort, column string) *map[string]string {
	switch column {
	case "options":
		return &r.Options
	case "external_ids":
		return &r.ExternalIDs
	}
	return nil
}

func switchMap(r *nbdb.LogicalSwitch, column string) *map[string]string {
	switch column {
	case "external_ids":
		return &r.ExternalIDs
	case "other_config":
		return &r.OtherConfig
	}
	return nil
}

// portColumns returns the fields of lsp that the monitor asks for: the
// name, dynamic_addresses (IPAM reads it), and each column of state.Fields
// that ports have, once.
func portColumns(lsp *nbdb.LogicalSwitchPort) []any {
	cols := []any{&lsp.Name, &lsp.DynamicAddresses}
	seen := map[string]bool{}
	for i := range state.Fields {
		f := &state.Fields[i]
		if seen[f.Column] {
			continue
		}
		switch {
		case f.Ref != "":
			cols = append(cols, portRef(lsp, f.Column))
		case f.PortSet != nil:
			cols = append(cols, portSet(lsp, f.Column))
		case f.PortKey != nil:
			cols = append(cols, portMap(lsp, f.Column))
		default:
			continue
		}
		seen[f.Column] = true
	}
	return cols
}

// switchColumns returns the fields of ls that the monitor asks for: the
// name and each column of state.Fields that switches have, once.
func switchColumns(ls *nbdb.LogicalSwitch) []any {
	cols := []any{&ls.Name}
	seen := map[string]bool{}
	for i := range state.Fields {
		if f := &state.Fields[i]; f.SwitchKey != nil && !seen[f.Column] {
			cols = append(cols, switchMap(ls, f.Column))
			seen[f.Column] = true
		}
	}
	return cols
}
