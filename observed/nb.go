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
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-logr/logr"
	"github.com/ovn-org/libovsdb/cache"
	"github.com/ovn-org/libovsdb/client"
	"github.com/ovn-org/libovsdb/model"
	"github.com/ovn-org/libovsdb/ovsdb"

	"github.com/ovn-sync/ovn-sync/nbdb"
	"github.com/ovn-sync/ovn-sync/observed/portview"
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
	// view is the Logical_Switch_Port table, which the client does not
	// monitor (see package portview); portHooks are called with each row
	// it changes.
	view *portview.View
	// reconnectTimeout bounds how long Transact waits for the view.
	reconnectTimeout time.Duration
	hooksMu          sync.Mutex
	portHooks        []func(old, cur *state.Port)

	// changed collects the rows the cache's event handler reports, for
	// StateVersion to read again.
	changed changeLog

	// mu serializes StateVersion; the fields below are its own.
	mu   sync.Mutex
	last state.State
	// read holds the cache tables last was read from. A reconnect that
	// purges the cache replaces the tables and fills the new ones before
	// any transaction can be sent again, but their events reach the
	// handler later: a replaced table alone makes StateVersion read anew.
	read tables
	// version counts the snapshots StateVersion has built.
	version uint64
	// rebuilds counts the snapshots built by reading every row.
	rebuilds uint64
	// changedAt[i] names the ports the snapshot of version knownFrom+1+i
	// read again (their names before and after); the snapshot of version
	// knownFrom read every row, or is the oldest whose successors are
	// kept. changedNames counts the names held. See ChangedPorts.
	knownFrom    uint64
	changedAt    [][]string
	changedNames int

	// ports and switches are the rows last holds, converted, by row UUID;
	// refs holds the UUIDs of the ports whose rows refer to a
	// DHCP_Options row.
	ports    map[string]memoPort
	refs     map[string]struct{}
	switches map[string]memoSwitch
	// dhcpNames names our DHCP_Options rows by UUID, as the last snapshot
	// read them; dhcpGen counts the snapshots in which that changed, so
	// that a port referring to a DHCP_Options row is converted again then.
	dhcpNames map[string]string
	dhcpGen   uint64
}

// tables are the tables a snapshot is read from: the view's load of the
// ports, the cache's switches and DHCP_Options.
type tables struct {
	ports          *portview.Table
	switches, dhcp *cache.RowCache
}

// changes are rows changed since a snapshot: the UUIDs of the ports and
// switches added, updated or deleted, and whether a DHCP_Options row was.
type changes struct {
	ports, switches map[string]struct{}
	dhcp            bool
	// refs says the ports referring to a DHCP_Options row may have
	// changed: a row deleted takes the references to it with it.
	refs bool
	// all says which rows changed is not known: every row is to be read.
	all bool
}

// changeLog collects the changes the cache's event handler reports, for
// StateVersion to take. The handler runs on libovsdb's event goroutine
// after the cache applied the change, so a row taken from here is read
// from the cache as it is since.
type changeLog struct {
	mu sync.Mutex
	// c.all is set until the first snapshot and when libovsdb dropped an
	// event; rows are not collected while it is set.
	c changes
}

// add records that row, of one of the cache's tables StateVersion reads,
// changed.
func (l *changeLog) add(row model.Model) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.c.all {
		return
	}
	switch r := row.(type) {
	case *nbdb.LogicalSwitch:
		l.c.switches = addUUID(l.c.switches, r.UUID)
	case *nbdb.DHCPOptions:
		l.c.dhcp = true
	}
}

// addPort records that the port row uuid changed.
func (l *changeLog) addPort(uuid string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.c.all {
		l.c.ports = addUUID(l.c.ports, uuid)
	}
}

func addUUID(set map[string]struct{}, uuid string) map[string]struct{} {
	if set == nil {
		set = map[string]struct{}{}
	}
	set[uuid] = struct{}{}
	return set
}

// sent records the rows a transaction of ours changed, once it
// committed: ops as sent, res as the server answered. ovsdb-server sends
// a transaction's updates to the monitor before its reply, and libovsdb
// applies them to the cache in order as they arrive, so the cache holds
// them when Transact returns; its event handler reports them later, on a
// goroutine of its own. Without this a snapshot taken right after our
// own transaction would not show it: the next pass would plan the same
// rows again. The rows are those an operation names by _uuid, those it
// inserted, and the ports a mutation of a switch's ports adds or takes
// out (a port taken out is deleted); switches named otherwise are all
// read again (switches, from the cache, lists them: they are few). The
// handler's later report of the same rows reads them again, to no
// effect. A transaction that failed changed nothing.
func (l *changeLog) sent(ops []ovsdb.Operation, res []ovsdb.OperationResult, switches func() []string) {
	if len(res) < len(ops) {
		return
	}
	for i := range ops {
		if res[i].Error != "" {
			return
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.c.all {
		return
	}
	everySwitch := false
	for i, op := range ops {
		var set *map[string]struct{}
		switch op.Table {
		case nbdb.LogicalSwitchPortTable:
			set = &l.c.ports
		case nbdb.LogicalSwitchTable:
			set = &l.c.switches
		case nbdb.DHCPOptionsTable:
			l.c.dhcp = true
			l.c.refs = l.c.refs || op.Op == ovsdb.OperationDelete
			continue
		default:
			continue
		}
		byUUID := false
		if op.Op == ovsdb.OperationInsert {
			*set = addUUID(*set, res[i].UUID.GoUUID)
			byUUID = true
		}
		for _, c := range op.Where {
			if u, ok := c.Value.(ovsdb.UUID); ok && c.Column == "_uuid" && c.Function == ovsdb.ConditionEqual {
				*set = addUUID(*set, u.GoUUID)
				byUUID = true
			}
		}
		if op.Table != nbdb.LogicalSwitchTable {
			continue
		}
		if op.Op == ovsdb.OperationDelete && !onlyEmpty(op.Where) {
			// The ports of a switch deleted go with it, and which those
			// are the cache does not say (it does not monitor ports).
			l.c = changes{all: true}
			return
		}
		everySwitch = everySwitch || !byUUID
		for _, m := range op.Mutations {
			if m.Column == "ports" {
				eachUUID(m.Value, func(u string) { l.c.ports = addUUID(l.c.ports, u) })
			}
		}
	}
	if everySwitch {
		for _, u := range switches() {
			l.c.switches = addUUID(l.c.switches, u)
		}
	}
}

// onlyEmpty reports whether where holds only for a switch without ports.
func onlyEmpty(where []ovsdb.Condition) bool {
	for _, c := range where {
		if set, ok := c.Value.(ovsdb.OvsSet); ok && c.Column == "ports" && c.Function == ovsdb.ConditionEqual && len(set.GoSet) == 0 {
			return true
		}
	}
	return false
}

// eachUUID calls f with each real (not named) UUID v holds: a UUID or a
// set of them.
func eachUUID(v any, f func(string)) {
	switch v := v.(type) {
	case ovsdb.UUID:
		if ovsdb.IsValidUUID(v.GoUUID) {
			f(v.GoUUID)
		}
	case ovsdb.OvsSet:
		for _, e := range v.GoSet {
			eachUUID(e, f)
		}
	}
}

// setAll records that any row may have changed.
func (l *changeLog) setAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.c = changes{all: true}
}

// take returns what was recorded and starts afresh.
func (l *changeLog) take() changes {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.c
	l.c = changes{}
	return c
}

type memoPort struct {
	row   *state.Port // as the view holds it
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
	// libovsdb drops a cache event when its queue is full (a reconnect
	// reloading more rows than the queue holds, a handler falling behind)
	// and says so only in its log: the next snapshot then reads every row.
	nb := &NB{ports: map[string]memoPort{}, refs: map[string]struct{}{}, switches: map[string]memoSwitch{},
		reconnectTimeout: reconnectTimeout}
	nb.changed.setAll()
	logger = logr.New(&dropWatch{inner: logger.GetSink(), onDrop: nb.changed.setAll})
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
	// cache would clone it, which makes per-port work quadratic. The ports
	// themselves are the view's.
	ls := &nbdb.LogicalSwitch{}
	dhcp := &nbdb.DHCPOptions{}
	_, err = c.Monitor(ctx, c.NewMonitor(
		client.WithTable(ls, switchColumns(ls)...),
		client.WithTable(dhcp, &dhcp.Cidr, &dhcp.Options, &dhcp.ExternalIDs),
	))
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("monitor NB: %w", err)
	}
	nb.client = c
	nb.view, err = portview.Start(ctx, portview.Options{
		Endpoint: func() string {
			if !c.Connected() {
				return ""
			}
			return c.CurrentEndpoint()
		},
		TLS: opts.TLS, OnChange: nb.portChanged, OnReload: nb.changed.setAll,
	})
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("monitor NB: %w", err)
	}
	// The cache applies every update before it queues the event, so once
	// the handler has recorded a row, the next StateVersion reads the row
	// as it is since. Events of the initial contents the handler misses
	// do not matter: the first snapshot reads every row.
	c.Cache().AddEventHandler(&cache.EventHandlerFuncs{
		AddFunc:    func(_ string, row model.Model) { nb.changed.add(row) },
		UpdateFunc: func(_ string, _, row model.Model) { nb.changed.add(row) },
		DeleteFunc: func(_ string, row model.Model) { nb.changed.add(row) },
	})
	return nb, nil
}

// dropMessage is what libovsdb v0.7's cache logs when it drops an event.
const dropMessage = "dropping event because event buffer is full"

// dropWatch is a logr sink that calls onDrop when libovsdb logs that it
// dropped a cache event, and passes everything on to inner (nil discards).
type dropWatch struct {
	inner  logr.LogSink
	onDrop func()
}

func (d *dropWatch) Init(info logr.RuntimeInfo) {
	if d.inner != nil {
		info.CallDepth++ // for the frame of dropWatch.Info
		d.inner.Init(info)
	}
}

// Enabled is true at level 0, where libovsdb logs a drop.
func (d *dropWatch) Enabled(level int) bool {
	return level == 0 || d.inner != nil && d.inner.Enabled(level)
}

func (d *dropWatch) Info(level int, msg string, kv ...any) {
	if msg == dropMessage {
		d.onDrop()
	}
	if d.inner != nil && d.inner.Enabled(level) {
		d.inner.Info(level, msg, kv...)
	}
}

func (d *dropWatch) Error(err error, msg string, kv ...any) {
	if d.inner != nil {
		d.inner.Error(err, msg, kv...)
	}
}

func (d *dropWatch) WithValues(kv ...any) logr.LogSink {
	if d.inner == nil {
		return d
	}
	return &dropWatch{inner: d.inner.WithValues(kv...), onDrop: d.onDrop}
}

func (d *dropWatch) WithName(name string) logr.LogSink {
	if d.inner == nil {
		return d
	}
	return &dropWatch{inner: d.inner.WithName(name), onDrop: d.onDrop}
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
//
// Once a transaction that changed ports committed, Transact waits until
// the view shows it (portview.View.Barrier), so that the next snapshot
// does.
func (nb *NB) Transact(ctx context.Context, ops ...ovsdb.Operation) ([]ovsdb.OperationResult, error) {
	res, err := nb.client.Transact(ctx, ops...)
	if err != nil && connectionLost(err) {
		return nil, fmt.Errorf("%w: %w", client.ErrNotConnected, err)
	}
	if err == nil && changesPorts(ops) {
		// A view that cannot tell (down longer than a reconnect takes)
		// loads every row again once it is back: a snapshot shows the
		// transaction then.
		bctx, cancel := context.WithTimeout(ctx, nb.reconnectTimeout)
		_ = nb.view.Barrier(bctx)
		cancel()
	}
	if err == nil {
		nb.changed.sent(ops, res, func() []string {
			return slices.Collect(maps.Keys(nb.client.Cache().Table(nbdb.LogicalSwitchTable).RowsShallow()))
		})
	}
	return res, err
}

// connectionLost reports whether err is the connection failing under a
// call, rather than the server or the client refusing it.
func connectionLost(err error) bool {
	var opErr *net.OpError
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &opErr)
}

// changesPorts reports whether ops may change a Logical_Switch_Port row:
// any operation but a select may (a switch deleted takes its ports, a
// DHCP_Options row deleted the references to it).
func changesPorts(ops []ovsdb.Operation) bool {
	for _, op := range ops {
		if op.Op != ovsdb.OperationSelect {
			return true
		}
	}
	return false
}

// Connected reports whether the client is connected now.
func (nb *NB) Connected() bool { return nb.client.Connected() }

// Close disconnects.
func (nb *NB) Close() {
	nb.view.Close()
	nb.client.Close()
}

// WatchPorts calls f with every Logical_Switch_Port row an update of the
// NB changes, once the snapshot's source holds it: old is nil for an
// insert, cur nil for a delete; references to DHCP_Options rows are UUIDs.
// A reconnect's reload reports nothing (WatchConnection tells of it). f
// runs on the goroutine that reads the NB: it must be quick and must not
// call nb.
func (nb *NB) WatchPorts(f func(old, cur *state.Port)) {
	nb.hooksMu.Lock()
	defer nb.hooksMu.Unlock()
	nb.portHooks = append(nb.portHooks, f)
}

// PortRows is the number of Logical_Switch_Port rows the NB holds, as far
// as the client has seen.
func (nb *NB) PortRows() int { return nb.view.Len() }

// portChanged records a row the view changed and passes the change on to
// the hooks WatchDrift added.
func (nb *NB) portChanged(old, cur *state.Port) {
	if cur != nil {
		nb.changed.addPort(cur.UUID)
	} else {
		nb.changed.addPort(old.UUID)
	}
	nb.hooksMu.Lock()
	hooks := nb.portHooks
	nb.hooksMu.Unlock()
	for _, h := range hooks {
		h(old, cur)
	}
}

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
// tell whether anything changed between two.
//
// A call costs what changed since the previous one: the rows the cache's
// event handler reported are read again, and the snapshot's Ports map and
// Index are copied, never changed, as the previous snapshot holds them.
// Every row is read when which rows changed is not known: at the first
// call, after the cache was purged (a reconnect) or dropped an event, and
// when many rows changed.
func (nb *NB) StateVersion() (state.State, uint64) {
	return nb.stateOf(nb.tables())
}

// tables returns the tables a snapshot is read from now.
func (nb *NB) tables() tables {
	tc := nb.client.Cache()
	return tables{nb.view.Table(), tc.Table(nbdb.LogicalSwitchTable), tc.Table(nbdb.DHCPOptionsTable)}
}

// stateOf is StateVersion reading t, the cache's tables now.
func (nb *NB) stateOf(t tables) (state.State, uint64) {
	nb.mu.Lock()
	defer nb.mu.Unlock()
	ch := nb.changed.take()
	if !ch.all && t == nb.read && len(ch.ports) == 0 && len(ch.switches) == 0 && !ch.dhcp {
		return nb.last, nb.version
	}
	nb.version++
	var names []string
	ok := false
	if !ch.all && t == nb.read {
		names, ok = nb.update(t, ch)
	}
	if !ok {
		nb.read = t
		nb.rebuild(t)
		nb.knownFrom, nb.changedAt, nb.changedNames = nb.version, nil, 0
		return nb.last, nb.version
	}
	nb.changedAt = append(nb.changedAt, names)
	nb.changedNames += len(names)
	for len(nb.changedAt) > maxChangedVersions || nb.changedNames > maxChangedNames {
		nb.changedNames -= len(nb.changedAt[0])
		nb.changedAt[0] = nil
		nb.changedAt = nb.changedAt[1:]
		nb.knownFrom++
	}
	return nb.last, nb.version
}

// ChangedPorts kept: the names of the last maxChangedVersions snapshots,
// at most maxChangedNames in all (a pass asks about the last few).
const (
	maxChangedVersions = 1024
	maxChangedNames    = 1 << 16
)

// ChangedPorts returns the names of the ports whose rows changed between
// the snapshots StateVersion handed out as versions from and to: every
// port the snapshot of to holds otherwise than that of from holds it
// (added, changed or gone, renamed under either name) is named, and a
// name may come more than once. ok is false when that is not known: a
// snapshot after from read every row (the first, after a reconnect or a
// dropped event, when many rows changed), from is older than the changes
// kept, or to is not a version handed out yet. A caller diffing against
// the snapshot of to uses it to look only at what changed since it diffed
// the snapshot of from.
func (nb *NB) ChangedPorts(from, to uint64) (names []string, ok bool) {
	nb.mu.Lock()
	defer nb.mu.Unlock()
	if from > to || from < nb.knownFrom || to > nb.version {
		return nil, false
	}
	for v := from + 1; v <= to; v++ {
		names = append(names, nb.changedAt[v-nb.knownFrom-1]...)
	}
	return names, true
}

// rebuild sets nb.last to a snapshot of every row of t. Rows whose
// conversion nb holds are not converted again.
func (nb *NB) rebuild(t tables) {
	nb.rebuilds++
	switchRows := t.switches.RowsShallow()

	n := nb.view.Len()
	s := state.State{Ports: state.NewPorts(n)}
	s.DHCP, _ = nb.readDHCP(t.dhcp)
	// The view replaces a row when it changes, so an unchanged pointer
	// means an unchanged row and its conversion is reused.
	ports := make(map[string]memoPort, n)
	refs := map[string]struct{}{}
	idx := make(state.Entries, 0, n)
	nb.read.ports = nb.view.Each(func(uuid string, row *state.Port) {
		m, ok := nb.ports[uuid]
		if !ok || m.row != row || m.refs && m.gen != nb.dhcpGen {
			m = nb.convertPort(row)
		}
		ports[uuid] = m
		if m.refs {
			refs[uuid] = struct{}{}
		}
		s.Ports.Set(m.entry.Port.Name, m.entry.Port)
		idx = append(idx, m.entry)
	})
	nb.ports, nb.refs = ports, refs
	// Logical_Switch_Port.name is a unique index in the NB schema, so every
	// row has its own entry in s.Ports and s.Index lists each once.
	idx.Sort()
	s.Index = state.IndexOf(idx)
	switches := make(map[string]memoSwitch, len(switchRows))
	for uuid, row := range switchRows {
		m, ok := nb.switches[uuid]
		if !ok || m.row != row {
			m = memoSwitch{row: row, sw: SwitchFromRow(row.(*nbdb.LogicalSwitch))}
		}
		switches[uuid] = m
	}
	nb.switches = switches
	s.Switches = switchesByName(switches)
	nb.last = s
}

// update sets nb.last to the previous snapshot with the rows in ch read
// again from t, and returns the names of the ports it read again (before
// and after); ch.all is not set. The maps and Index of the previous
// snapshot, which callers may hold, are replaced, not changed. It returns
// false, and nb.last is not set, when so many ports changed that rebuild is
// cheaper, and when the ports have fewer names than rows (an update that
// renames one port and gives its name to another, read half applied): only
// rebuild gives the snapshot it would then. The conversions update made
// are current, and rebuild reuses what it can of them.
func (nb *NB) update(t tables, ch changes) ([]string, bool) {
	if len(ch.ports) > 1024 && 4*len(ch.ports) > len(nb.ports) || nb.view.Table() != t.ports {
		return nil, false
	}
	s := nb.last
	if ch.dhcp {
		var renamed map[string]bool
		s.DHCP, renamed = nb.readDHCP(t.dhcp)
		// A port referring to a row whose name changed is read again;
		// the others' conversions stand for the new names too.
		for uuid := range nb.refs {
			m := nb.ports[uuid]
			if r := m.row; r.DHCPv4 != "" && renamed[r.DHCPv4] || r.DHCPv6 != "" && renamed[r.DHCPv6] {
				ch.ports = addUUID(ch.ports, uuid)
			} else {
				m.gen = nb.dhcpGen
				nb.ports[uuid] = m
			}
		}
	}
	if ch.refs {
		for uuid := range nb.refs {
			ch.ports = addUUID(ch.ports, uuid)
		}
	}
	cloned := false
	var del, ins []state.Entry
	var names []string
	for uuid := range ch.ports {
		// Row returns the row, or nil once it is deleted.
		r := nb.view.Row(t.ports, uuid)
		m, had := nb.ports[uuid]
		switch {
		case !had && r == nil:
			continue // inserted and deleted since the last snapshot
		case had && r != nil && (!m.refs || m.gen == nb.dhcpGen) && m.row == r:
			continue // as converted: a snapshot read the row before its event came
		}
		if !cloned {
			s.Ports, cloned = s.Ports.Clone(), true
		}
		if had {
			if p := m.entry.Port; s.Ports.Get(p.Name) == p {
				s.Ports.Delete(p.Name)
			}
			names = append(names, m.entry.Port.Name)
			del = append(del, m.entry)
			delete(nb.ports, uuid)
			delete(nb.refs, uuid)
		}
		if r != nil {
			m := nb.convertPort(r)
			nb.ports[uuid] = m
			if m.refs {
				nb.refs[uuid] = struct{}{}
			}
			s.Ports.Set(m.entry.Port.Name, m.entry.Port)
			ins = append(ins, m.entry)
			if !had || r.Name != names[len(names)-1] {
				names = append(names, r.Name)
			}
		}
	}
	if cloned {
		s.Index = s.Index.Patch(del, ins)
		// A port's entry in s.Ports is deleted only when it is that
		// port's, and each port is set under its name: s.Ports has as many
		// entries as there are rows only when no two rows share a name,
		// and then it is what rebuild makes.
		if s.Ports.Len() != len(nb.ports) {
			return nil, false
		}
	}
	if len(ch.switches) > 0 {
		for uuid := range ch.switches {
			if r, ok := t.switches.Row(uuid).(*nbdb.LogicalSwitch); ok {
				nb.switches[uuid] = memoSwitch{row: r, sw: SwitchFromRow(r)}
			} else {
				delete(nb.switches, uuid)
			}
		}
		// Switches are few (one per network): their map is built anew.
		s.Switches = switchesByName(nb.switches)
	}
	nb.last = s
	return names, true
}

// convertPort converts r with the DHCP_Options names nb holds now. A row
// without references is the snapshot's port as it is: it is not copied.
func (nb *NB) convertPort(r *state.Port) memoPort {
	return memoPort{row: r, entry: state.EntryOf(namePort(r, func(uuid string) string { return nb.dhcpNames[uuid] })),
		gen: nb.dhcpGen, refs: r.DHCPv4 != "" || r.DHCPv6 != ""}
}

// namePort returns the view's row r with its references named by name:
// r itself when it has none or none is named, a copy otherwise.
func namePort(r *state.Port, name func(uuid string) string) *state.Port {
	if r == nil || r.DHCPv4 == "" && r.DHCPv6 == "" {
		return r
	}
	v4, v6 := r.DHCPv4, r.DHCPv6
	if v4 != "" {
		v4 = cmp.Or(name(v4), v4)
	}
	if v6 != "" {
		v6 = cmp.Or(name(v6), v6)
	}
	if v4 == r.DHCPv4 && v6 == r.DHCPv6 {
		return r
	}
	p := *r
	p.DHCPv4, p.DHCPv6 = v4, v6
	return &p
}

// readDHCP reads our DHCP_Options rows of table (nil reads none), sets
// nb.dhcpNames to their names and returns them by name, with the UUIDs
// whose name changed (one named before or now, and not the same).
// DHCP_Options rows are few (one per subnet and family): they are read
// whole every time one changes.
func (nb *NB) readDHCP(table *cache.RowCache) (map[string]*state.DHCPOptions, map[string]bool) {
	// Two rows of one name (an insert retried after its reply was lost)
	// are both ours: the lower UUID keeps the name, the other is read as
	// "<name>#<uuid>", which no pass desires, so the next plan deletes it.
	byName, names := map[string]*state.DHCPOptions{}, map[string]string{}
	if table != nil {
		var rows []*state.DHCPOptions
		for _, row := range table.RowsShallow() {
			if d := DHCPFromRow(row.(*nbdb.DHCPOptions)); d != nil {
				rows = append(rows, d)
			}
		}
		slices.SortFunc(rows, func(a, b *state.DHCPOptions) int { return strings.Compare(a.UUID, b.UUID) })
		for _, d := range rows {
			if _, dup := byName[d.Name]; dup {
				c := *d
				c.Name = d.Name + "#" + d.UUID
				d = &c
			}
			byName[d.Name] = d
			names[d.UUID] = d.Name
		}
	}
	renamed := map[string]bool{}
	for uuid, n := range names {
		if nb.dhcpNames[uuid] != n {
			renamed[uuid] = true
		}
	}
	for uuid := range nb.dhcpNames {
		if _, ok := names[uuid]; !ok {
			renamed[uuid] = true
		}
	}
	if len(renamed) > 0 {
		nb.dhcpNames = names
		nb.dhcpGen++
	}
	return byName, renamed
}

// switchesByName returns the switches of memo by name. Logical_Switch.name
// is not unique in the NB schema: of two switches of one name, the one of
// the lower UUID is read.
func switchesByName(memo map[string]memoSwitch) map[string]*state.Switch {
	out := make(map[string]*state.Switch, len(memo))
	for _, m := range memo {
		if o := out[m.sw.Name]; o == nil || m.sw.UUID < o.UUID {
			out[m.sw.Name] = m.sw
		}
	}
	return out
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

// portSet, portRef, portMap and switchMap return where a row model keeps
// the column a field of state.Fields names, which is where the switches'
// monitor asks for it (switchColumns) and where the conversions of rows
// read it; nil for a column they do not know, which observed's tests
// catch. (The port view reads ports from the wire: package portview.)
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
