package desired

import (
	"iter"
	"runtime"
	"strings"
	"testing"
	"unsafe"
	"weak"

	corev1 "k8s.io/api/core/v1"

	"github.com/ovn-sync/ovn-sync/state"
)

// readHook is a PodStore that calls hook before it yields its first pod
// to Read: a point in the middle of a Build.
type readHook struct {
	PodStore
	hook func()
}

func (s readHook) Read() iter.Seq2[*corev1.Pod, Annotations] {
	s.hook()
	return s.PodStore.Read()
}

// Full lets go of the last result before it builds: a pass that held it
// would hold two results, the last and the one being built, at its peak.
// And a port whose NB row is what the pass wants is that row, not a copy.
func TestFullLetsGoOfLastResult(t *testing.T) {
	cfg, err := NewConfig("ovn-default", []string{"10.16.0.0/16"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	pods := []*corev1.Pod{pod("default", "a", nil), pod("default", "b", nil)}
	var x Engine
	first := x.Full(Inputs{Pods: pods}, cfg, state.New(0))
	have := state.New(2)
	for name, p := range first.Want.Ports.All() {
		row := *p
		row.UUID = "uuid-" + name
		have.Ports.Set(name, &row)
	}
	last := weak.Make(x.b)
	first = Result{}
	held := true
	x.Full(Inputs{StoredPods: readHook{PodCopies(pods), func() {
		runtime.GC()
		held = last.Value() != nil
	}}}, cfg, have)
	if held {
		t.Error("the last result is still held while Full builds the next")
	}
	want, _ := x.Want()
	for name, row := range have.Ports.All() {
		if p := want.Ports.Get(name); p != row {
			t.Errorf("want's port %s = %+v, want the NB's row %+v itself", name, p, row)
		}
	}
}

// A result kept from pass to pass holds no name of the Build that made it
// where the NB's row has that name: want is keyed by the row's own string,
// not by the spec's, which shares one allocation with the owner's id
// (newOwner) and would stay alive as long as the result.
func TestFullKeepsRowNames(t *testing.T) {
	cfg, err := NewConfig("ovn-default", []string{"10.16.0.0/16"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	pods := []*corev1.Pod{pod("default", "a", nil)}
	var x Engine
	first := x.Full(Inputs{Pods: pods}, cfg, state.New(0))
	// The NB's rows, with strings of their own as the port view reads them.
	have := state.New(1)
	for _, p := range first.Want.Ports.All() {
		row := *p
		row.Name, row.Owner, row.UUID = strings.Clone(p.Name), strings.Clone(p.Owner), "uuid-"+p.Name
		have.Ports.Set(row.Name, &row)
	}
	first = Result{}
	spec := func() weak.Pointer[byte] {
		r := x.Full(Inputs{Pods: pods}, cfg, have)
		if len(r.specs) != 1 || r.specs[0].port != have.Ports.Get(r.specs[0].name) {
			t.Fatalf("the result's port is not the NB's row")
		}
		return weak.Make(unsafe.StringData(r.specs[0].name))
	}()
	for range 3 {
		runtime.GC()
	}
	if spec.Value() != nil {
		t.Error("the engine keeps the name its Build gave the port, beside the NB row's")
	}
	if want, _ := x.Want(); want.Ports.Len() != 1 {
		t.Errorf("want holds %d ports, want 1", want.Ports.Len())
	}
}
