package main

import (
	"net"
	"net/http"
	"runtime/debug"
	"sync/atomic"
	"testing"

	"github.com/go-logr/logr"

	"github.com/ovn-sync/ovn-sync/reconcile"
)

// TestPprofOnlyWhenAsked: Go's profiles are served with --pprof, and
// without it not at all.
func TestPprofOnlyWhenAsked(t *testing.T) {
	for _, on := range []bool{false, true} {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		stop, err := serveHTTP(logr.Discard(), httpOptions{addr: addr, pprof: on}, reconcile.NewMetrics(), new(atomic.Pointer[reconcile.Loop]))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.Get("http://" + addr + "/debug/pprof/heap?debug=1")
		stop()
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if want := map[bool]int{false: http.StatusNotFound, true: http.StatusOK}[on]; resp.StatusCode != want {
			t.Errorf("--pprof=%v: /debug/pprof/heap answers %d, want %d", on, resp.StatusCode, want)
		}
	}
}

// A full pass runs the collector at GOGC/4, and GOGC again once it ends,
// with its memory returned (once the last of overlapping passes ends);
// with GOGC off, it stays off.
func TestFullPassMemory(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	freed := 0
	begin := fullPassMemory(func() { freed++ })
	end := begin()
	if g := gcPercent(); g != 25 {
		t.Errorf("GOGC %d during a full pass, want 25", g)
	}
	end()
	if g := gcPercent(); g != 100 || freed != 1 {
		t.Errorf("after a full pass: GOGC %d, memory returned %d times; want 100 and once", g, freed)
	}
	// Overlapping brackets (the first lists and the first pass), ended in
	// either order: GOGC is back once both have ended, and each end
	// counts once.
	lists, pass := begin(), begin()
	lists()
	lists()
	if g := gcPercent(); g != 25 || freed != 1 {
		t.Errorf("one of two brackets ended: GOGC %d, memory returned %d times; want 25 and once", g, freed)
	}
	pass()
	if g := gcPercent(); g != 100 || freed != 2 {
		t.Errorf("both brackets ended: GOGC %d, memory returned %d times; want 100 and twice", g, freed)
	}
	debug.SetGCPercent(-1)
	freed = 1
	begin = fullPassMemory(func() { freed++ })
	begin()()
	if g := gcPercent(); g >= 0 || freed != 2 {
		t.Errorf("GOGC off: %d after a full pass, memory returned %d times; want off and twice", g, freed)
	}
}
