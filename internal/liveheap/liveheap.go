package liveheap

import "runtime"

// Bytes returns the bytes of live heap objects after a full collection. It
// is signed so that the difference of two readings, which falls when
// something was let go in between, needs no conversion.
func Bytes() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
