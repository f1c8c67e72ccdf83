package main

import (
	"net"
	"net/http"
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
