// Package liveheap reads how much of the Go heap is live: what a process
// still holds, with the garbage collected first. Benchmarks and the
// benchmark harness measure what a structure keeps as the difference of two
// readings, one with it and one without:
//
//	before := liveheap.Bytes()
//	kept := build()
//	held := liveheap.Bytes() - before
//	runtime.KeepAlive(kept)
//
// Peak measures what a function holds at most while it runs, as a
// transient (a full pass) costs it.
//
// A reading runs a full collection, which stops the world: call it between
// measurements, never inside a timed loop.
package liveheap
