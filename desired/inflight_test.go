package desired

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	kubeovnv1 "github.com/ovn-sync/ovn-sync/apis/kubeovn/v1"
	"github.com/ovn-sync/ovn-sync/state"
)

// TestIncrementalInFlight drives Update as run mode does over informers
// whose stores lag the API server: every change is queued, and reaches
// its store before a pass's take, during the pass (between two of its
// lookups) or in a later pass. What a take names is what sources
// promises: every object with a change queued and not yet handled, and
// every object whose change reached its store since the last take. So a
// pass may find an object by name and miss it in an index, find one that
// is gone by the pass's end, or never see a pod that was created and
// deleted. Whatever it built from, once the stores hold still through a
// take and its pass, the result must equal a full Build of the stores;
// and no result may hand out an address twice.
func TestIncrementalInFlight(t *testing.T) {
	var stable, updates, migrating int
	rapid.Check(t, func(t *rapid.T) {
		c := newCluster(t)
		// Two VMs run from the start, to be migrated.
		for _, name := range []string{"vm-a", "vm-b"} {
			c.put(runningVM(name, c.created(t)))
			vmi := runningVMI(name, "node-1", c.created(t))
			c.put(vmi)
			c.put(c.launcher(name, "src", "node-1", vmi.CreationTimestamp))
		}
		s := &lagging{stores: maps.Clone(c.objects), queued: map[state.ObjectRef][]any{}, told: map[state.ObjectRef]bool{}}
		var x Engine
		have := applied(state.New(0), x.Full(s.inputs(), c.cfg, state.New(0)).Want)
		pass := func(step int, final bool) {
			changed := s.take()
			still := len(s.queued) == 0
			s.plan(t, final)
			r, why := x.Update(s, changed, c.cfg, have)
			moved := s.moved
			s.at, s.moved = nil, false
			in := s.inputs()
			if why.Gave() {
				r = x.Full(in, c.cfg, have)
			} else {
				updates++
			}
			for _, err := range invariants(have, r) {
				t.Fatalf("step %d, after %v: %v", step, changed, err)
			}
			for _, p := range r.Want.Ports.All() {
				if strings.Contains(p.RequestedChassis, ",") {
					migrating++
					break
				}
			}
			if still && !moved {
				stable++
				if d := Mismatch(r, Build(in, c.cfg, have)); d != "" {
					t.Fatalf("step %d, stores held still, after %v: incremental and full Build differ: %s", step, changed, d)
				}
			}
			have = applied(have, r.Want)
			if r.Again {
				have = applied(have, x.Full(in, c.cfg, have).Want)
			}
		}
		steps := rapid.IntRange(1, 30).Draw(t, "steps")
		var recent [][]state.ObjectRef // what each event made
		for step := range steps {
			for range rapid.IntRange(0, 2).Draw(t, "events") {
				var refs []state.ObjectRef
				if len(recent) > 0 && rapid.IntRange(0, 2).Draw(t, "undo") == 0 {
					// What an event made goes again (a migration and
					// its target pod, a VM started and stopped), perhaps
					// before its making reached the stores.
					i := rapid.IntRange(0, len(recent)-1).Draw(t, "undone")
					for _, ref := range recent[i] {
						if _, ok := c.objects[ref]; ok && ref.Kind != kindNAD {
							refs = append(refs, c.del(ref))
						}
					}
					recent = slices.Delete(recent, i, i+1)
				} else {
					// Mostly KubeVirt's churn: VMs started and stopped,
					// migrations, their pods.
					refs = c.eventOf(t, rapid.SampledFrom([]int{0, 2, 3, 5, 6, 7, 8, 11, 12, 13, 13, 13}).Draw(t, "event"))
					recent = append(recent, refs)
				}
				for _, ref := range refs {
					s.queued[ref] = append(s.queued[ref], c.objects[ref]) // nil: deleted
				}
			}
			// Some changes reach their stores before the take.
			for _, ref := range s.inFlight() {
				for range rapid.IntRange(0, len(s.queued[ref])).Draw(t, "stored before the take") {
					s.store(ref)
				}
			}
			pass(step, false)
		}
		// Everything reaches the stores, and one more pass is told of it.
		for _, ref := range s.inFlight() {
			for len(s.queued[ref]) > 0 {
				s.store(ref)
			}
		}
		pass(steps, true)
	})
	t.Logf("%d updates, %d of them over stores that held still; %d results with a VM migrating", updates, stable, migrating)
	if stable == 0 {
		t.Fatal("no pass ran over stores that held still")
	}
}

// lagging is informers' stores that lag the objects: changes queued for
// each object reach its store in order, at times the test draws. As
// Objects, it is a pass's lookups; a lookup may first store the changes
// planned to reach their stores by then.
type lagging struct {
	stores map[state.ObjectRef]any
	// queued holds each object's changes not stored yet, oldest first.
	queued map[state.ObjectRef][]any
	// told holds the objects stored since the last take.
	told map[state.ObjectRef]bool
	// at holds, for the pass running, the lookup from which each of an
	// object's queued changes is stored (none: not in this pass).
	at      map[state.ObjectRef][]int
	lookups map[state.ObjectRef]int
	moved   bool // a change was stored during the pass
	objs    Objects
}

func (s *lagging) inputs() Inputs { return inputsOf(s.stores) }

func (s *lagging) inFlight() []state.ObjectRef {
	return slices.SortedFunc(maps.Keys(s.queued), func(a, b state.ObjectRef) int { return strings.Compare(a.String(), b.String()) })
}

// store stores ref's oldest queued change.
func (s *lagging) store(ref state.ObjectRef) {
	q := s.queued[ref]
	if q[0] == nil {
		delete(s.stores, ref)
	} else {
		s.stores[ref] = q[0]
	}
	if q = q[1:]; len(q) == 0 {
		delete(s.queued, ref)
	} else {
		s.queued[ref] = q
	}
	s.told[ref] = true
	s.objs = nil
}

// take names what sources' take names: the objects stored since the
// last take and those with changes queued (named again by later takes,
// until stored).
func (s *lagging) take() []state.ObjectRef {
	names := maps.Clone(s.told)
	clear(s.told)
	for ref := range s.queued {
		names[ref] = true
	}
	return slices.SortedFunc(maps.Keys(names), func(a, b state.ObjectRef) int { return strings.Compare(a.String(), b.String()) })
}

// plan draws when the queued changes reach their stores during the pass:
// from some lookup of the object on, or not in this pass (always, when
// final).
func (s *lagging) plan(t *rapid.T, final bool) {
	s.at, s.lookups = map[state.ObjectRef][]int{}, map[state.ObjectRef]int{}
	if final {
		return
	}
	for _, ref := range s.inFlight() {
		from := 0
		for range s.queued[ref] {
			n := rapid.IntRange(-1, 3).Draw(t, "stored at its lookup")
			if n < 0 {
				break // this and later changes: not in this pass
			}
			from += n
			s.at[ref] = append(s.at[ref], from)
		}
	}
}

// look is a lookup of the object ref: it counts one lookup of it and
// first stores its changes planned by then. Lookups are counted by object,
// not in all, so that what a pass sees does not hang on the order in which
// it walks its maps.
func (s *lagging) look(ref state.ObjectRef) Objects {
	if at := s.at[ref]; len(at) > 0 {
		s.lookups[ref]++
		for len(at) > 0 && at[0] <= s.lookups[ref] {
			s.store(ref)
			s.moved = true
			at = at[1:]
		}
		s.at[ref] = at
	}
	if s.objs == nil {
		s.objs = ObjectsOf(s.inputs())
	}
	return s.objs
}

// lookIndex is a lookup through an index: a lookup of each object of kind
// in namespace ns of which a version, stored or queued, is listed under
// the key (of).
func (s *lagging) lookIndex(kind, ns string, of func(any) bool) Objects {
	for _, ref := range s.inFlight() {
		if ref.Kind != kind || ref.Namespace != ns {
			continue
		}
		listed := false
		if o, ok := s.stores[ref]; ok && of(o) {
			listed = true
		}
		for _, o := range s.queued[ref] {
			listed = listed || o != nil && of(o)
		}
		if listed {
			s.look(ref)
		}
	}
	return s.look(state.ObjectRef{})
}

func (s *lagging) Pod(ns, name string) *corev1.Pod {
	return s.look(state.ObjectRef{Kind: kindPod, Namespace: ns, Name: name}).Pod(ns, name)
}
func (s *lagging) VirtualMachine(ns, name string) *kubevirtv1.VirtualMachine {
	return s.look(state.ObjectRef{Kind: kindVirtualMachine, Namespace: ns, Name: name}).VirtualMachine(ns, name)
}
func (s *lagging) VirtualMachineInstance(ns, name string) *kubevirtv1.VirtualMachineInstance {
	return s.look(state.ObjectRef{Kind: kindVirtualMachineInst, Namespace: ns, Name: name}).VirtualMachineInstance(ns, name)
}
func (s *lagging) Migration(ns, name string) *kubevirtv1.VirtualMachineInstanceMigration {
	return s.look(state.ObjectRef{Kind: state.KindVirtualMachineInstanceMigration, Namespace: ns, Name: name}).Migration(ns, name)
}
func (s *lagging) IP(name string) *kubeovnv1.IP {
	return s.look(state.ObjectRef{Kind: state.KindIP, Namespace: "", Name: name}).IP(name)
}

func (s *lagging) OwnedVMIs(ns, vm string) []*kubevirtv1.VirtualMachineInstance {
	return s.lookIndex(kindVirtualMachineInst, ns, func(o any) bool {
		return OwnerVM(o.(*kubevirtv1.VirtualMachineInstance)) == vm
	}).OwnedVMIs(ns, vm)
}

func (s *lagging) Launchers(ns, vmi string) []*corev1.Pod {
	return s.lookIndex(kindPod, ns, func(o any) bool {
		v, ok := LauncherOf(o.(*corev1.Pod))
		return ok && v == vmi
	}).Launchers(ns, vmi)
}

func (s *lagging) Migrations(ns, vmi string) []*kubevirtv1.VirtualMachineInstanceMigration {
	return s.lookIndex(state.KindVirtualMachineInstanceMigration, ns, func(o any) bool {
		return o.(*kubevirtv1.VirtualMachineInstanceMigration).Spec.VMIName == vmi
	}).Migrations(ns, vmi)
}

func (s *lagging) StatefulSetIPs(ns, set string) []*kubeovnv1.IP {
	return s.lookIndex(state.KindIP, "", func(o any) bool {
		ip := o.(*kubeovnv1.IP)
		name, _, ok := StatefulSetPod(ip.Spec.PodName)
		return ok && name == set && ip.Spec.Namespace == ns
	}).StatefulSetIPs(ns, set)
}

// Networks are listed at the take, before the pass's lookups.
func (s *lagging) Networks() Inputs   { return ObjectsOf(s.inputs()).Networks() }
func (s *lagging) Unreadable() string { return "" }
