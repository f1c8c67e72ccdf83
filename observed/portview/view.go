package portview

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"sync"

	"github.com/ovn-sync/ovn-sync/internal/intern"
	"github.com/ovn-sync/ovn-sync/state"
)

// Options configures Start.
type Options struct {
	// Endpoint returns the OVSDB endpoint to follow the table on now
	// (unix:PATH, tcp:HOST:PORT or ssl:HOST:PORT), "" while there is none:
	// the endpoint the caller's libovsdb client is connected to, so that
	// the view reads the server the caller's transactions go to. The view
	// moves when it changes (checked every 50 ms).
	Endpoint func() string
	// TLS is used for ssl: endpoints.
	TLS *tls.Config
	// OnChange, when set, is called with every row an update changes
	// (old nil for an insert, cur nil for a delete), once the whole update
	// is applied, on the goroutine that reads the connection.
	OnChange func(old, cur *state.Port)
	// OnReload, when set, is called once a load replaced the table (the
	// first load included), on the same goroutine.
	OnReload func()
}

// View is the NB's Logical_Switch_Port table as ovn-sync reads it (see
// the package's doc for its contract). Start makes one.
//
// A row the view holds is never changed: an update replaces it. Its
// DHCPv4 and DHCPv6 hold the UUIDs the row refers to; the caller names
// them.
type View struct {
	// endpoint is Options.Endpoint: where to follow the table now, ""
	// while there is nowhere.
	endpoint func() string
	tls      *tls.Config
	// onChange and onReload are Options.OnChange and OnReload.
	onChange func(old, cur *state.Port)
	onReload func()

	mu sync.RWMutex
	// table is nil until the first load and replaced at every reload, so
	// that a reader can tell the rows it read before from a new set.
	table *Table

	// wmu serializes writes to conn and guards the fields below.
	wmu    sync.Mutex
	conn   net.Conn
	synced bool
	// ready is closed while synced, open (and replaced) while not.
	ready   chan struct{}
	nextID  uint64
	waiting map[uint64]chan error

	// shared holds the strings that repeat across rows, rares their rare
	// fields (a subnet's DHCP_Options rows, kube-ovn's vendor keys). Both
	// are the reading goroutine's.
	shared *intern.Strings
	rares  state.Rares

	stop context.CancelFunc
	done chan struct{}
}

// Table is one load of the table and the updates applied to it since. A
// reload makes a new one: a caller holding the Table it read rows from
// tells by it whether the rows it holds are still of the current load.
type Table struct {
	rows map[string]*state.Port // by row UUID
}

// Start starts following the table on opts.Endpoint and returns once it
// is loaded, or with ctx's error. ctx bounds the wait only: the view
// follows the table until Close.
func Start(ctx context.Context, opts Options) (*View, error) {
	runCtx, stop := context.WithCancel(context.Background())
	v := &View{endpoint: opts.Endpoint, tls: opts.TLS, onChange: opts.OnChange, onReload: opts.OnReload,
		waiting: map[uint64]chan error{}, shared: intern.New(1 << 16), stop: stop, done: make(chan struct{}),
		ready: make(chan struct{})}
	go v.run(runCtx)
	if err := v.waitSynced(ctx); err != nil {
		v.Close()
		return nil, fmt.Errorf("load Logical_Switch_Port: %w", err)
	}
	return v, nil
}

// Close stops following the table and returns once the goroutine
// reading the connection is done: no callback runs after it.
func (v *View) Close() {
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
func (v *View) waitSynced(ctx context.Context) error {
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
func (v *View) Synced() bool {
	v.wmu.Lock()
	defer v.wmu.Unlock()
	return v.synced
}

// Table returns the current load, nil before the first.
func (v *View) Table() *Table {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.table
}

// Row returns the row uuid of t as the view holds it now, nil when it is
// gone or t is not the current load.
func (v *View) Row(t *Table, uuid string) *state.Port {
	v.mu.RLock()
	defer v.mu.RUnlock()
	if t != v.table {
		return nil
	}
	return t.rows[uuid]
}

// Each calls f with every row of the current load, which it returns, under
// the view's read lock: f must not call the view.
func (v *View) Each(f func(uuid string, p *state.Port)) *Table {
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
func (v *View) Len() int {
	v.mu.RLock()
	defer v.mu.RUnlock()
	if v.table == nil {
		return 0
	}
	return len(v.table.rows)
}

// load replaces the table with the monitor's initial rows.
func (v *View) load(rows []rowChange) {
	t := &Table{rows: make(map[string]*state.Port, len(rows))}
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
func (v *View) apply(rows []rowChange) {
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
