package portview

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
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/ovn-sync/ovn-sync/nbdb"
	"github.com/ovn-sync/ovn-sync/state"
)

// errViewDown: the view's connection is down or not loaded yet.
var errViewDown = errors.New("Logical_Switch_Port monitor not connected")

// Barrier returns once the view holds every change the server committed
// before Barrier was called: it sends an echo on the view's connection and
// waits for the reply. The server answers a connection's requests in
// order and sends a monitor's updates before it reads the next request
// (ovsdb-server flushes a session's monitors before receiving; libovsdb's
// server sends them within the transaction), and the view applies each
// message before it reads the next: so once a transaction sent on another
// connection to the same server returned, Barrier makes the view show it.
// While the view is down it waits until it has loaded the table again,
// which shows every change committed before. It returns ctx's error, or
// an error when the connection drops before the reply: the view then
// shows the change once it has loaded the table again.
func (v *View) Barrier(ctx context.Context) error {
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
func (v *View) writeLocked(msg any) error {
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

// run follows the table until ctx is done: it connects to the endpoint
// v.endpoint gives, loads the table and applies its updates, and starts
// again when the connection drops or v.endpoint gives another endpoint.
func (v *View) run(ctx context.Context) {
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

// reconnectBackoff paces the attempts to connect again, as the libovsdb
// client's: from 100 ms, doubling up to 5 s, for as long as the view runs.
func reconnectBackoff() backoff.BackOff {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = 100 * time.Millisecond
	b.MaxInterval = 5 * time.Second
	b.MaxElapsedTime = 0
	return b
}

// sleepCtx sleeps for d, or until ctx is done.
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

// session follows the table over one connection to ep until it drops or
// v.endpoint gives another endpoint, and reports whether the table was
// loaded.
func (v *View) session(ctx context.Context, ep string) (loaded bool) {
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

	// The connection closes when ctx is done or the endpoint moved.
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

// handle acts on one message and reports whether the session goes on.
func (v *View) handle(m message) bool {
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

// reply answers the request id with result.
func (v *View) reply(id json.RawMessage, result any) {
	v.wmu.Lock()
	defer v.wmu.Unlock()
	v.writeLocked(map[string]any{"id": id, "result": result, "error": nil})
}

// replyError answers the request id with the error msg; a notification
// (no id) is not answered.
func (v *View) replyError(id json.RawMessage, msg string) {
	if string(id) == "null" || len(id) == 0 {
		return
	}
	v.wmu.Lock()
	defer v.wmu.Unlock()
	v.writeLocked(map[string]any{"id": id, "result": nil, "error": msg})
}
