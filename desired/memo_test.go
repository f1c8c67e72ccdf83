package desired

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/ovn-sync/ovn-sync/state"
)

// A Memo returns what Build returns: the remembered result while the
// versions and config stay, a fresh one as soon as either changes.
func TestMemo(t *testing.T) {
	cfg, err := NewConfig("ovn-default", []string{"10.16.0.0/24"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewConfig("ovn-default", []string{"10.17.0.0/24"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	in1 := Inputs{Pods: []*corev1.Pod{pod("default", "a", nil)}}
	in2 := Inputs{Pods: []*corev1.Pod{pod("default", "a", nil), pod("default", "b", nil)}}
	have := state.New(0)
	var m Memo
	steps := []struct {
		name string
		in   Inputs
		cfg  Config
		v    Versions
		hit  bool
	}{
		{"first call builds", in1, cfg, Versions{1, 1}, false},
		{"same versions reuse", in1, cfg, Versions{1, 1}, true},
		{"new inputs version builds", in2, cfg, Versions{2, 1}, false},
		{"new have version builds", in2, cfg, Versions{2, 2}, false},
		{"new config builds", in2, other, Versions{2, 2}, false},
		{"back to the first config builds", in2, cfg, Versions{2, 2}, false},
	}
	var prev state.State
	for _, s := range steps {
		if got := m.Hit(s.cfg, s.v); got != s.hit {
			t.Errorf("%s: Hit = %v, want %v", s.name, got, s.hit)
		}
		got, gotProblems := wantProblems(m.Build(s.in, s.cfg, have, s.v))
		want, wantProblems := wantProblems(Build(s.in, s.cfg, have))
		if !state.DeepEqual(got, want) || !reflect.DeepEqual(gotProblems, wantProblems) {
			t.Errorf("%s: Memo.Build = %v %v, want Build's %v %v", s.name, got.Ports, gotProblems, want.Ports, wantProblems)
		}
		// A hit hands back the very same value; a miss a new one.
		same := prev.Ports != (state.Ports{}) && got.Ports == prev.Ports
		if same != s.hit {
			t.Errorf("%s: result shared with the previous call = %v, want %v", s.name, same, s.hit)
		}
		prev = got
	}
	m.Reset()
	if m.Hit(cfg, Versions{2, 2}) {
		t.Errorf("Hit after Reset = true, want false")
	}
}
