package portview

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/go-logr/logr"
	"github.com/ovn-org/libovsdb/cache"
	"github.com/ovn-org/libovsdb/model"
	"github.com/ovn-org/libovsdb/ovsdb"

	"github.com/ovn-sync/ovn-sync/internal/intern"
	"github.com/ovn-sync/ovn-sync/internal/liveheap"
	"github.com/ovn-sync/ovn-sync/nbdb"
	"github.com/ovn-sync/ovn-sync/state"
)

// feed has v read the JSON-RPC messages of stream, as from its connection,
// and returns what v wrote back.
func feed(t testing.TB, v *View, stream string) string {
	t.Helper()
	client, server := net.Pipe()
	var wrote bytes.Buffer
	done := make(chan struct{})
	go func() {
		io.Copy(&wrote, server)
		close(done)
	}()
	v.wmu.Lock()
	v.conn = client
	v.wmu.Unlock()
	r := newJSONReader(strings.NewReader(stream))
	for {
		m, err := v.readMessage(r)
		if err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			t.Fatalf("readMessage: %v", err)
		}
		if !v.handle(m) {
			t.Fatalf("the session ended at %+v", m)
		}
	}
	client.Close()
	<-done
	return wrote.String()
}

func newTestView() *View {
	return &View{waiting: map[uint64]chan error{}, shared: intern.New(1 << 16), ready: make(chan struct{})}
}

// TestPortViewDecode: the view reads rows as ovsdb-server and libovsdb's
// server write them — atoms and sets, UUIDs, maps with keys it keeps and
// keys it does not, escapes — applies update2's diffs (sets and maps
// toggled, a map key replaced, 0..1 columns set, cleared and replaced,
// a row renamed, deleted and inserted), reports each change, and answers
// the requests of a server.
func TestPortViewDecode(t *testing.T) {
	v := newTestView()
	type change struct{ old, cur *state.Port }
	var changes []change
	v.onChange = func(old, cur *state.Port) { changes = append(changes, change{old, cur}) }
	reloads := 0
	v.onReload = func() { reloads++ }

	const ua, ub, uc = "aaaaaaaa-0000-4000-8000-000000000000", "bbbbbbbb-0000-4000-8000-000000000000", "cccccccc-0000-4000-8000-000000000000"
	reply := `{"id":0,"result":{"Logical_Switch":{"x":{"initial":{"name":"ignored"}}},"Logical_Switch_Port":{
	"` + ua + `":{"initial":{"name":"p\u00e9\"a","addresses":"0a:58:0a:10:00:02 10.16.0.2","port_security":["set",["z","0a:58:0a:10:00:02 10.16.0.2"]],
		"options":["map",[["requested-chassis","node-1"],["iface-id-ver","7"]]],
		"external_ids":["map",[["ovn-sync/owner","Pod/ns/a"],["ovn-sync/switch","ovn-default"],["ovn-sync/network","default"],["pod","yes"]]],
		"dhcpv4_options":["uuid","dddddddd-0000-4000-8000-000000000004"],"dynamic_addresses":["set",[]],"dhcpv6_options":["set",[]]}},
	"` + ub + `":{"initial":{"name":"b","addresses":["set",["dynamic"]],"dynamic_addresses":"0a:58:0a:10:00:09 10.16.0.9",
		"external_ids":["map",[["vendor","kube-ovn"],["ls","ovn-default"],["pod","ns/b"]]]}}}},"error":null}`
	wrote := feed(t, v, reply)
	if wrote != "" || reloads != 1 || len(changes) != 0 || !v.Synced() {
		t.Fatalf("after the monitor's reply: wrote %q, %d reloads, %d changes, synced %v; want nothing, 1, 0, true", wrote, reloads, len(changes), v.Synced())
	}
	a := (&state.Port{Name: "p\u00e9\"a", UUID: ua, Switch: "ovn-default", Addresses: []string{"0a:58:0a:10:00:02 10.16.0.2"},
		PortSecurity: []string{"0a:58:0a:10:00:02 10.16.0.2", "z"}, Owner: "Pod/ns/a", Network: "default", RequestedChassis: "node-1"}).
		SetRare(&state.Rare{DHCPv4: "dddddddd-0000-4000-8000-000000000004"})
	b := (&state.Port{Name: "b", UUID: ub, Addresses: []string{"dynamic"}}).
		SetRare(&state.Rare{DynamicAddresses: "0a:58:0a:10:00:09 10.16.0.9", Vendor: "kube-ovn", VendorSwitch: "ovn-default"})
	want := map[string]*state.Port{ua: a, ub: b}
	if got := v.Table().rows; !reflect.DeepEqual(got, want) {
		t.Fatalf("loaded rows:\n%s\nwant\n%s", dump(got), dump(want))
	}

	// ovsdb-server's notification, then libovsdb's server's request.
	update := `{"id":null,"method":"update2","params":["ovn-sync-lsp",{"Logical_Switch_Port":{
	"` + ua + `":{"modify":{"name":"a2","addresses":["set",["0a:58:0a:10:00:02 10.16.0.2","0a:58:0a:10:00:03 10.16.0.3"]],
		"options":["map",[["requested-chassis","node-1"],["activation-strategy","rarp"],["iface-id-ver","8"]]],
		"external_ids":["map",[["ovn-sync/switch","sw-2"],["pod","no"]]],
		"dhcpv4_options":["uuid","dddddddd-0000-4000-8000-000000000004"],"dhcpv6_options":["uuid","eeeeeeee-0000-4000-8000-000000000006"]}},
	"` + ub + `":{"delete":null}}}]}` + "\n" +
		`{"method":"update2","params":["ovn-sync-lsp",{"Logical_Switch_Port":{"` + uc + `":{"insert":{"name":"c"}},
	"` + ua + `":{"modify":{"dynamic_addresses":"0a:58:0a:10:00:05 10.16.0.5"}}}}],"id":7}` + "\n" +
		`{"id":"echo","method":"echo","params":[]}`
	wrote = feed(t, v, update)
	a2 := *a
	a2.Name, a2.Addresses, a2.RequestedChassis, a2.Switch = "a2", []string{"0a:58:0a:10:00:03 10.16.0.3"}, "", "sw-2"
	a2.SetRare(&state.Rare{ActivationStrategy: "rarp", DHCPv6: "eeeeeeee-0000-4000-8000-000000000006"})
	a3 := a2
	a3.EditRare(func(r *state.Rare) { r.DynamicAddresses = "0a:58:0a:10:00:05 10.16.0.5" })
	c := &state.Port{Name: "c", UUID: uc}
	want = map[string]*state.Port{ua: &a3, uc: c}
	if got := v.Table().rows; !reflect.DeepEqual(got, want) {
		t.Fatalf("rows after the updates:\n%s\nwant\n%s", dump(got), dump(want))
	}
	wantChanges := []change{{a, &a2}, {b, nil}, {nil, c}, {&a2, &a3}}
	if len(changes) != len(wantChanges) {
		t.Fatalf("%d changes reported, want %d", len(changes), len(wantChanges))
	}
	for i, w := range wantChanges {
		if g := changes[i]; !reflect.DeepEqual(g, w) {
			t.Errorf("change %d: %+v -> %+v, want %+v -> %+v", i, g.old, g.cur, w.old, w.cur)
		}
	}
	// The request's reply has a result (libovsdb's server takes a null
	// one for an error), and the echo is answered.
	dec := json.NewDecoder(strings.NewReader(wrote))
	var replies []map[string]any
	for dec.More() {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("the view wrote %q: %v", wrote, err)
		}
		replies = append(replies, m)
	}
	if len(replies) != 2 || replies[0]["id"] != 7.0 || replies[0]["result"] == nil || replies[1]["id"] != "echo" || replies[1]["result"] == nil {
		t.Errorf("the view wrote %q; want a reply with a result to the request of id 7, then to the echo", wrote)
	}
	// The rows a change replaced are as they were: snapshots share them.
	if a.Name != "p\u00e9\"a" || len(a.Addresses) != 1 || a.DHCPv4() == "" {
		t.Errorf("the row the update replaced changed: %+v", a)
	}
}

// TestPortViewPacksRows: a row's own strings (its UUID, name, owner and
// addresses) are parts of one string, and its port_security's entries
// that are addresses are the addresses' strings.
func TestPortViewPacksRows(t *testing.T) {
	v := newTestView()
	const uuid = "aaaaaaaa-0000-4000-8000-000000000000"
	feed(t, v, `{"id":0,"result":{"Logical_Switch_Port":{"`+uuid+`":{"initial":{"name":"web-0.shop",
		"addresses":["set",["0a:58:0a:10:00:02 10.16.0.2","0a:58:0a:10:00:03 10.16.0.3"]],
		"port_security":["set",["0a:58:0a:10:00:03 10.16.0.3","0a:58:0a:10:00:09"]],
		"external_ids":["map",[["ovn-sync/owner","Pod/shop/web-0"],["ovn-sync/switch","ovn-default"]]]}}}},"error":null}`)
	var key string
	for k := range v.Table().rows {
		key = k
	}
	p := v.Table().rows[uuid]
	if p == nil || p.Name != "web-0.shop" || p.Owner != "Pod/shop/web-0" || len(p.Addresses) != 2 || len(p.PortSecurity) != 2 {
		t.Fatalf("row read as %+v", p)
	}
	parts := []string{p.UUID, key, p.Name, p.Owner, p.Addresses[0], p.Addresses[1], p.PortSecurity[0]}
	lo, hi := unsafe.StringData(p.UUID), unsafe.StringData(p.UUID)
	for _, s := range parts {
		if d := unsafe.StringData(s); uintptr(unsafe.Pointer(d)) < uintptr(unsafe.Pointer(lo)) {
			lo = d
		}
		if end := unsafe.Add(unsafe.Pointer(unsafe.StringData(s)), len(s)); uintptr(end) > uintptr(unsafe.Pointer(hi)) {
			hi = (*byte)(end)
		}
	}
	if span, n := uintptr(unsafe.Pointer(hi))-uintptr(unsafe.Pointer(lo)), len(uuid)+len(p.Name)+len(p.Owner)+len(p.Addresses[0])+len(p.Addresses[1]); span != uintptr(n) {
		t.Errorf("the row's own strings span %d bytes, want the %d of one string", span, n)
	}
	if unsafe.StringData(p.PortSecurity[0]) != unsafe.StringData(p.Addresses[1]) {
		t.Error("port_security's address is not the address's string")
	}
	if p.PortSecurity[1] != "0a:58:0a:10:00:09" {
		t.Errorf("port_security = %q", p.PortSecurity)
	}
	// As ovn-sync writes a port: one entry in both sets, held once.
	const same = "bbbbbbbb-0000-4000-8000-000000000000"
	feed(t, v, `{"method":"update3","params":["view","`+same+`",{"Logical_Switch_Port":{"`+same+`":{"insert":{"name":"web-1.shop",
		"addresses":"0a:58:0a:10:00:04 10.16.0.4","port_security":"0a:58:0a:10:00:04 10.16.0.4"}}}}],"id":null}`)
	if q := v.Table().rows[same]; q == nil || len(q.PortSecurity) != 1 || &q.PortSecurity[0] != &q.Addresses[0] {
		t.Errorf("a row with one entry in both sets read as %+v: want port_security to be the addresses' set", q)
	}
}

// TestPortViewRejects: a stream that is not JSON, or a row whose column
// holds a value of the wrong kind, ends the session with an error rather
// than a row read wrong.
func TestPortViewRejects(t *testing.T) {
	for _, stream := range []string{
		`{"id":0,"result":{"Logical_Switch_Port":{"u":{"initial":{"name":"a","addresses":["map",[]]}}}},"error":null}`,
		`{"id":0,"result":{"Logical_Switch_Port":{"u":{"initial":{"name":"a","options":["set",[]]}}}},"error":null}`,
		`{"id":0,"result":{"Logical_Switch_Port":{"u":{"initial":{"name":"a",}}}},"error":null}`,
		`{"id":0,"result":{"Logical_Switch_Port":{"u":{"initial":{"name":3}}}},"error":null}`,
	} {
		v := newTestView()
		r := newJSONReader(strings.NewReader(stream))
		if m, err := v.readMessage(r); err == nil {
			t.Errorf("readMessage(%s) = %+v, nil; want an error", stream, m)
		}
	}
}

func dump(rows map[string]*state.Port) string {
	var b strings.Builder
	for u, p := range rows {
		fmt.Fprintf(&b, "%s: %+v\n", u, *p)
	}
	return b.String()
}

// monitorReply returns the monitor's reply holding n ports as ovn-sync
// writes them, each with a few keys of others (kube-ovn's, a CMS's), spread
// over 8 switches and 300 chassis.
func monitorReply(n int) []byte { return monitorReplyOf(n, false) }

// monitorReplyOf is monitorReply, whose rows are, with kubeOVN, ports
// adopted from kube-ovn on DHCP subnets: kube-ovn's external_ids:vendor and
// ls kept, and dhcpv4_options referring to the subnet's row.
func monitorReplyOf(n int, kubeOVN bool) []byte {
	var b bytes.Buffer
	b.WriteString(`{"id":0,"error":null,"result":{"Logical_Switch_Port":{`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		addr := fmt.Sprintf("0a:58:0a:%02x:%02x:%02x 10.%d.%d.%d", i>>16&255, i>>8&255, i&255, i>>16&255, i>>8&255, i&255)
		theirs := ""
		if kubeOVN {
			theirs = fmt.Sprintf(`,["vendor","kube-ovn"],["ls","subnet-%d"]]],"dhcpv4_options":["uuid","dddddddd-0000-4000-8000-%012x"]`, i%8, i%8)
		}
		fmt.Fprintf(&b, `"%08x-%04x-4000-8000-%012x":{"initial":{"name":"pod-%d.ns-%d","addresses":%q,"port_security":%q,`+
			`"options":["map",[["requested-chassis","node-%d"],["iface-id-ver","%d"]]],`+
			`"external_ids":["map",[["ovn-sync/owner","Pod/ns-%d/pod-%d"],["ovn-sync/network","default"],["ovn-sync/switch","subnet-%d"],["pod","ns-%d/pod-%d"]%s}}`,
			i, i&0xffff, i, i, i%97, addr, addr, i%300, i, i%97, i, i%8, i%97, i, cmp.Or(theirs, "]]"))
	}
	b.WriteString(`}}}`)
	return b.Bytes()
}

// TestPortViewSharesRare: rows that hold the same rare fields (the ports
// of a kube-ovn subnet, adopted with their vendor keys and DHCP_Options
// row) share them, so that such a row costs what one of ovn-sync's own
// costs, measured side by side in this process.
func TestPortViewSharesRare(t *testing.T) {
	const n = 20000
	load := func(kubeOVN bool) (*View, int64) {
		payload := monitorReplyOf(n, kubeOVN)
		var v *View
		b := heapOf(func() {
			v = newTestView()
			m, err := v.readMessage(newJSONReader(bytes.NewReader(payload)))
			if err != nil {
				t.Fatal(err)
			}
			v.handle(m)
		})
		runtime.KeepAlive(payload) // live through the count
		if v.Len() != n {
			t.Fatalf("the view loaded %d rows, want %d", v.Len(), n)
		}
		return v, b
	}
	own, ownBytes := load(false)
	theirs, theirBytes := load(true)
	for _, p := range theirs.Table().rows {
		if p.Vendor() != state.VendorKubeOVN || p.VendorSwitch() == "" || p.DHCPv4() == "" {
			t.Fatalf("row %s reads vendor %q, ls %q, dhcpv4_options %q", p.Name, p.Vendor(), p.VendorSwitch(), p.DHCPv4())
		}
	}
	runtime.KeepAlive(own)
	runtime.KeepAlive(theirs)
	extra := float64(theirBytes-ownBytes) / n
	t.Logf("per port: ovn-sync's own %.0f B, kube-ovn's with their keys and DHCP %.0f B (+%.0f B)",
		float64(ownBytes)/n, float64(theirBytes)/n, extra)
	if extra > 32 {
		t.Errorf("a row with kube-ovn's keys and a DHCP reference takes %.0f B more than one without; want at most 32 (rows share their rare fields)", extra)
	}
}

// TestPortViewMemory: the view's cost per port stays within twice what
// the same ports take as bare state.Port values (their strings their own,
// the repeated ones shared, as the view shares them), measured side by side
// in this process; libovsdb's generic cache of the same rows is measured
// beside them for the record.
func TestPortViewMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("loads 50000 rows three ways")
	}
	const n = 50000
	payload := monitorReply(n)
	var v *View
	viewBytes := heapOf(func() {
		v = newTestView()
		r := newJSONReader(bytes.NewReader(payload))
		m, err := v.readMessage(r)
		if err != nil {
			t.Fatal(err)
		}
		v.handle(m)
	})
	if v.Len() != n {
		t.Fatalf("the view loaded %d rows, want %d", v.Len(), n)
	}
	var bare []*state.Port
	bareBytes := heapOf(func() {
		shared := map[string]string{}
		share := func(s string) string {
			if o, ok := shared[s]; ok {
				return o
			}
			shared[s] = s
			return s
		}
		bare = make([]*state.Port, 0, n)
		for _, p := range v.Table().rows {
			c := &state.Port{Name: strings.Clone(p.Name), UUID: strings.Clone(p.UUID), Owner: strings.Clone(p.Owner),
				Switch: share(p.Switch), Network: share(p.Network), RequestedChassis: share(p.RequestedChassis)}
			addr := strings.Clone(p.Addresses[0])
			c.Addresses, c.PortSecurity = []string{addr}, []string{addr}
			bare = append(bare, c)
		}
	})
	var tc *cache.TableCache
	cacheBytes := heapOf(func() {
		var reply struct {
			Result ovsdb.TableUpdates2 `json:"result"`
		}
		if err := json.Unmarshal(payload, &reply); err != nil {
			t.Fatal(err)
		}
		tc = newTableCache(t)
		if err := tc.Populate2(reply.Result); err != nil {
			t.Fatal(err)
		}
	})
	runtime.KeepAlive(v)
	runtime.KeepAlive(bare)
	runtime.KeepAlive(tc)
	per := func(b int64) float64 { return float64(b) / n }
	ratio := float64(viewBytes) / float64(bareBytes)
	t.Logf("per port: view %.0f B, bare state.Port %.0f B (view/bare %.2f), libovsdb's cache %.0f B (view/cache %.2f)",
		per(viewBytes), per(bareBytes), ratio, per(cacheBytes), float64(viewBytes)/float64(cacheBytes))
	if ratio > 2 {
		t.Errorf("the view takes %.0f B a port, %.2f times the bare ports' %.0f B; want at most 2", per(viewBytes), ratio, per(bareBytes))
	}
}

// newTableCache returns an empty libovsdb cache of the NB's tables;
// nothing runs its event loop.
func newTableCache(t testing.TB) *cache.TableCache {
	t.Helper()
	clientModel, err := nbdb.FullDatabaseModel()
	if err != nil {
		t.Fatal(err)
	}
	dbModel, errs := model.NewDatabaseModel(nbdb.Schema(), clientModel)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	logger := logr.Discard()
	tc, err := cache.NewTableCache(dbModel, nil, &logger)
	if err != nil {
		t.Fatal(err)
	}
	return tc
}

// heapOf returns the heap that f leaves allocated.
func heapOf(f func()) int64 {
	before := liveheap.Bytes()
	f()
	return liveheap.Bytes() - before
}
