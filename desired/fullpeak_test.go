package desired

import (
	"iter"
	"runtime"
	"testing"
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
