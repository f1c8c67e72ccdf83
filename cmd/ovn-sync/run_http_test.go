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

// A full pass runs the collector at GOGC/fullPassGC, and GOGC again once it ends,
// with its memory returned; the informers' first lists at GOGC/listsGC. While
// brackets overlap the faster pace holds, and GOGC is back (and the
// memory returned) once the last ends, in either order. With GOGC off,
// it stays off.
func TestGCBrackets(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	freed := 0
	begin := gcBrackets(func() { freed++ })
	check := func(when string, gogc, wantFreed int) {
		t.Helper()
		if g := gcPercent(); g != gogc || freed != wantFreed {
			t.Errorf("%s: GOGC %d, memory returned %d times; want %d and %d", when, g, freed, gogc, wantFreed)
		}
	}
	end := begin(fullPassGC)
	check("during a full pass", 100/fullPassGC, 0)
	end()
	check("after a full pass", 100, 1)
	lists := begin(listsGC)
	check("during the lists", 100/listsGC, 1)
	pass := begin(fullPassGC)
	check("a full pass during the lists", 100/fullPassGC, 1)
	pass()
	pass()
	check("the lists after a full pass ended (twice)", 100/listsGC, 1)
	lists()
	check("both ended", 100, 2)
	lists, pass = begin(listsGC), begin(fullPassGC)
	lists()
	check("a full pass after the lists ended", 100/fullPassGC, 2)
	pass()
	check("both ended, the other way", 100, 3)
	debug.SetGCPercent(-1)
	freed = 0
	begin = gcBrackets(func() { freed++ })
	begin(fullPassGC)()
	begin(listsGC)()
	check("GOGC off", -1, 2)
}
