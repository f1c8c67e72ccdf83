package liveheap

import (
	"runtime"
	"testing"
)

// TestBytesCountsWhatIsKept: a buffer kept alive between two readings is in
// their difference, and out of the next once nothing refers to it.
func TestBytesCountsWhatIsKept(t *testing.T) {
	const size = 32 << 20
	before := Bytes()
	kept := make([]byte, size)
	with := Bytes()
	runtime.KeepAlive(kept) // and not after: the next reading may collect it
	after := Bytes()
	// Within 1%: the test's own garbage comes and goes meanwhile.
	const least = size - size/100
	if d := with - before; d < least {
		t.Errorf("Bytes() grew by %d with %d bytes kept, want at least %d", d, size, least)
	}
	if d := with - after; d < least {
		t.Errorf("Bytes() fell by %d once %d bytes were let go, want at least %d", d, size, least)
	}
}
