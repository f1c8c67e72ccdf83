package intern

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"
)

// A string given twice is held once while the strings are few; past the
// bound every string is forgotten, and a string given again is held anew,
// equal to what it was.
func TestStringsForgetPastTheirBound(t *testing.T) {
	const max = 1 << 10
	in := New(max)
	first := in.Get(strings.Clone("node-1"))
	if again := in.Get(strings.Clone("node-1")); unsafe.StringData(again) != unsafe.StringData(first) {
		t.Fatal("a string given twice is held twice")
	}
	for i := range max {
		in.Get(fmt.Sprint("pod-", i))
	}
	if n := in.Len(); n > max {
		t.Fatalf("Strings hold %d strings, past their bound of %d", n, max)
	}
	if again := in.Get(strings.Clone("node-1")); again != "node-1" || unsafe.StringData(again) == unsafe.StringData(first) {
		t.Errorf("once forgotten, node-1 is %q, held as before: %v", again, unsafe.StringData(again) == unsafe.StringData(first))
	}
}
