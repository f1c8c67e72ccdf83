package liveheap

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Bytes returns the bytes of live heap objects after a full collection. It
// is signed so that the difference of two readings, which falls when
// something was let go in between, needs no conversion.
func Bytes() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// Peak runs f with the collector run often (GOGC 10) and returns the most
// live heap a collection found while it ran, less the live heap before it:
// about what f held at its peak, within a tenth. A goroutine reads the
// collector's figure every 100µs meanwhile, and once more after f returns
// and a last collection.
func Peak(f func()) int64 {
	before := Bytes()
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	stop, top := make(chan struct{}), make(chan uint64)
	go func() {
		t := time.NewTicker(100 * time.Microsecond)
		defer t.Stop()
		var most uint64
		for {
			most = max(most, live())
			select {
			case <-stop:
				top <- most
				return
			case <-t.C:
			}
		}
	}()
	f()
	runtime.GC()
	close(stop)
	return int64(max(<-top, live())) - before
}

// live is the live heap the last collection found.
func live() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
