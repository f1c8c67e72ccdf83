package liveheap

import (
	"runtime"
	"testing"
	"time"
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

// TestPeakCountsWhatWasHeld: a buffer held for a while inside f, and let
// go before f returns, is in Peak's figure; f that holds nothing is not.
func TestPeakCountsWhatWasHeld(t *testing.T) {
	const size = 64 << 20
	held := Peak(func() {
		b := make([]byte, size)
		runtime.GC()                     // a collection finds it live,
		time.Sleep(5 * time.Millisecond) // and the figure is read
		runtime.KeepAlive(b)
	})
	if least := int64(size - size/100); held < least {
		t.Errorf("Peak(f holding %d bytes) = %d, want at least %d", size, held, least)
	}
	if none := Peak(func() { runtime.GC() }); none > size/8 {
		t.Errorf("Peak(f holding nothing) = %d, want under %d", none, size/8)
	}
}
