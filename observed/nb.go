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

	// changed collects the rows the cache's event handler, the view and
	// our transactions report changed, for StateVersion to read again.
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

	// ports and switches are the rows last holds, converted, by row UUID
	// (a port is the view's row itself unless the row refers to a
	// DHCP_Options row; its index entry is last's); refs holds, of the
	// ports whose rows refer to one, the row each conversion was made from.
	ports    map[string]*state.Port
	refs     map[string]refSource
	switches map[string]memoSwitch
	// dhcpNames names our DHCP_Options rows by UUID, as the last snapshot
	// read them; dhcpGen counts the snapshots in which that changed, so
	// that a port referring to a DHCP_Options row is converted again then.
	dhcpNames map[string]string
	dhcpGen   uint64
	// rares hands out the rare fields of the ports whose references the
	// snapshot names: a subnet's ports share one.
	rares state.Rares
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
	nb := &NB{ports: map[string]*state.Port{}, refs: map[string]refSource{}, switches: map[string]memoSwitch{},
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
