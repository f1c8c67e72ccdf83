package observed

import (
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ovn-sync/ovn-sync/nbdb"
	"github.com/ovn-sync/ovn-sync/observed/portview"
	"github.com/ovn-sync/ovn-sync/state"
)

// fakePorts serves one Logical_Switch_Port monitor by hand on a unix
// socket, for a portview.View to follow: an empty table, then the rows a
// test sets, which a real NB would refuse (two rows of one name: the name
// index is unique). It answers a request only after the updates it sent
// before, as a server does, so the view's Barrier returns once the view
// holds them.
type fakePorts struct {
	t    *testing.T
	view *portview.View
	// mu serializes writes to conn.
	mu   sync.Mutex
	conn net.Conn
}

// startFakePorts starts a server and a view following it, which calls
// onChange with each row an update changes. Both stop when the test ends.
func startFakePorts(t *testing.T, onChange func(old, cur *state.Port)) *fakePorts {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "nb.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	f := &fakePorts{t: t}
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		f.mu.Lock()
		f.conn = conn
		f.mu.Unlock()
		f.serve(conn)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f.view, err = portview.Start(ctx, portview.Options{Endpoint: func() string { return "unix:" + sock }, OnChange: onChange})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.view.Close)
	return f
}

// serve answers the view's requests until the connection closes: the
// monitor with an empty table, an echo with its params.
func (f *fakePorts) serve(conn net.Conn) {
	dec := json.NewDecoder(conn)
	for {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if err := dec.Decode(&req); err != nil {
			return
		}
		var result any = map[string]any{}
		if req.Method == "echo" {
			result = req.Params
		}
		f.write(map[string]any{"id": req.ID, "result": result, "error": nil})
	}
}

func (f *fakePorts) write(msg any) {
	b, err := json.Marshal(msg)
	if err != nil {
		panic(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.conn.Write(b)
}

// set sends an update2 that inserts the row uuid named name, or deletes it
// when name is "", and returns once the view holds it.
func (f *fakePorts) set(uuid, name string) {
	f.t.Helper()
	var row any = map[string]any{"delete": nil}
	if name != "" {
		row = map[string]any{"insert": map[string]any{"name": name}}
	}
	f.write(map[string]any{"id": nil, "method": "update2",
		"params": []any{"ovn-sync-lsp", map[string]any{nbdb.LogicalSwitchPortTable: map[string]any{uuid: row}}}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.view.Barrier(ctx); err != nil {
		f.t.Fatalf("Barrier after setting %s to %q: %v", uuid, name, err)
	}
}
