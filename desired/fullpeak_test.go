package desired

import (
	"fmt"
	"iter"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"
	"weak"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

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
// where the NB's row has that name: the owner's id and its port's name are
// the row's own strings (ownerNames), and want is keyed by the row's name.
// Were they the Build's, every full pass would make them again for every
// owner, and the result would keep them beside the NB's.
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
	r := x.Full(Inputs{Pods: pods}, cfg, have)
	if len(r.specs) != 1 {
		t.Fatalf("%d specs, want 1", len(r.specs))
	}
	s := r.specs[0]
	row := have.Ports.Get(s.name)
	if s.port != row {
		t.Fatalf("the result's port is not the NB's row")
	}
	same := func(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }
	if !same(s.name, row.Name) || !same(s.o.base, row.Name) {
		t.Error("the port's name is not the NB row's string")
	}
	if !same(s.o.id, row.Owner) {
		t.Error("the owner's id is not the NB row's string")
	}
	for name := range r.Want.Ports.All() {
		if !same(name, row.Name) {
			t.Error("want is not keyed by the NB row's name")
		}
	}
	if want, _ := x.Want(); want.Ports.Len() != 1 {
		t.Errorf("want holds %d ports, want 1", want.Ports.Len())
	}
}

// An owner whose port the NB holds under another owner's id (a VM's and a
// VMI's ports share names) does not take that row's strings.
func TestOwnerNamesOnlyOfItsOwnRow(t *testing.T) {
	have := state.New(1)
	have.Ports.Set("a.default", &state.Port{Name: "a.default", Owner: "VirtualMachineInstance/default/a"})
	b := newBuilder(Inputs{}, have, 1)
	id, base := b.ownerNames(kindVirtualMachine, "default", "a")
	if id != "VirtualMachine/default/a" || base != "a.default" {
		t.Fatalf("ownerNames = %q, %q", id, base)
	}
	if unsafe.StringData(base) == unsafe.StringData(have.Ports.Get("a.default").Name) {
		t.Error("the owner took the name of another owner's row")
	}
	id, _ = b.ownerNames(kindVirtualMachineInst, "default", "a")
	if unsafe.StringData(id) != unsafe.StringData(have.Ports.Get("a.default").Owner) {
		t.Error("the owner of the row did not take its id")
	}
}

// weakCopies is a Stored that makes a copy of an object at each read, as
// Copies does, and records a weak pointer to each object it made copies
// in.
type weakCopies[T any, P interface {
	*T
	DeepCopy() P
}] struct {
	objs []P
	made *[]weak.Pointer[T]
}

func (s weakCopies[T, P]) Len() int { return len(s.objs) }
func (s weakCopies[T, P]) At(i int) P {
	c := s.objs[i].DeepCopy()
	*s.made = append(*s.made, weak.Make((*T)(c)))
	return c
}

// Reader makes every copy in one object's memory, as Copies' does.
func (s weakCopies[T, P]) Reader() func(int) P {
	reused := new(T)
	*s.made = append(*s.made, weak.Make(reused))
	return func(i int) P {
		*reused = *s.objs[i].DeepCopy()
		return reused
	}
}

func alive[T any](made []weak.Pointer[T]) int {
	n := 0
	for _, w := range made {
		if w.Value() != nil {
			n++
		}
	}
	return n
}

// A full Build holds no VM or VMI it made from a store (StoredVMs,
// StoredVMIs) beyond its read: its KubeVirt index holds positions, and
// Build makes an object again where it reads it. In the middle of the
// Build (as it reads the pods, once every VM and VMI is indexed) and
// after it, while the engine and its result live on, every VM and VMI
// made, or memory a Reader made them in, is collected. A Build that held them would hold about 1.5 KB a VM
// and a VMI at a full pass's peak.
func TestFullHoldsNoStoredVM(t *testing.T) {
	cfg, err := NewConfig("ovn-default", []string{"10.16.0.0/16"}, []string{"10.16.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	created := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	const n = 20
	var vms []*kubevirtv1.VirtualMachine
	var vmis []*kubevirtv1.VirtualMachineInstance
	for i := range n {
		name := fmt.Sprintf("vm-%d", i)
		vms = append(vms, runningVM(name, created))
		if i%2 == 0 {
			vmis = append(vmis, runningVMI(name, "node-1", created))
		}
	}
	var madeVMs []weak.Pointer[kubevirtv1.VirtualMachine]
	var madeVMIs []weak.Pointer[kubevirtv1.VirtualMachineInstance]
	midVMs, midVMIs := -1, -1
	in := Inputs{
		StoredVMs:  weakCopies[kubevirtv1.VirtualMachine, *kubevirtv1.VirtualMachine]{vms, &madeVMs},
		StoredVMIs: weakCopies[kubevirtv1.VirtualMachineInstance, *kubevirtv1.VirtualMachineInstance]{vmis, &madeVMIs},
		StoredPods: readHook{PodCopies([]*corev1.Pod{pod("tenant", "web", nil)}), func() {
			runtime.GC()
			midVMs, midVMIs = alive(madeVMs), alive(madeVMIs)
		}},
	}
	var x Engine
	r := x.Full(in, cfg, state.New(0))
	if want := n + 1; r.Want.Ports.Len() != want { // a port a VM, and the pod's
		t.Fatalf("the Build wants %d ports, want %d", r.Want.Ports.Len(), want)
	}
	bound := 0
	for _, p := range r.Want.Ports.All() {
		if strings.HasPrefix(p.Name, "vm-") && p.RequestedChassis == "node-1" {
			bound++
		}
	}
	if bound != n/2 {
		t.Errorf("%d ports are bound to node-1, want the %d of the VMs whose VMI runs there", bound, n/2)
	}
	if midVMs != 0 || midVMIs != 0 {
		t.Errorf("as the Build reads the pods, %d VMs and %d VMIs it made while indexing are held", midVMs, midVMIs)
	}
	for range 3 {
		runtime.GC()
	}
	if a, b := alive(madeVMs), alive(madeVMIs); a != 0 || b != 0 || len(madeVMs) == 0 || len(madeVMIs) == 0 {
		t.Errorf("after the Build, %d of %d VMs and %d of %d VMIs made are held", a, len(madeVMs), b, len(madeVMIs))
	}
	runtime.KeepAlive(r)
	runtime.KeepAlive(&x)
}

// A Build that reads VMs and VMIs from stores, each made in the memory of
// the one before with its annotations in one map (Copies' Reader), builds
// what it builds from lists: a running VM's port takes the address its
// VMI asks for (the kube-ovn annotation it started with), not the address
// a VMI read after it asks for.
func TestStoredVMsBuildAsListed(t *testing.T) {
	cfg, err := NewConfig("ovn-default", []string{"10.16.0.0/16"}, []string{"10.16.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	created := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var vms []*kubevirtv1.VirtualMachine
	var vmis []*kubevirtv1.VirtualMachineInstance
	for i := range 3 {
		name := fmt.Sprintf("vm-%d", i)
		vmi := runningVMI(name, "node-1", created)
		vmi.Annotations = map[string]string{DefaultIPAnnotation: fmt.Sprintf("10.16.0.%d", 10+i)}
		vms, vmis = append(vms, runningVM(name, created)), append(vmis, vmi)
	}
	want := Build(Inputs{VirtualMachines: vms, VirtualMachineInstances: vmis}, cfg, state.New(0))
	if p := want.Want.Ports.Get("vm-0.tenant"); p == nil || !strings.HasSuffix(p.Addresses[0], " 10.16.0.10") {
		t.Fatalf("from lists, vm-0's port is %+v, want it at 10.16.0.10", p)
	}
	got := Build(Inputs{StoredVMs: Copies(vms), StoredVMIs: Copies(vmis)}, cfg, state.New(0))
	if m := Mismatch(got, want); m != "" {
		t.Errorf("VMs and VMIs read from stores build otherwise: %s", m)
	}
}

// Once a result's plan is applied, Settle makes each port the NB now holds
// as the result has it the NB's row itself, in the ports and in the index,
// leaving the result it was given as it was; a row that holds more than
// the port (dynamic_addresses) is not taken. An Update from the settled
// result keeps those rows, and gives what Build gives.
func TestSettleTakesTheRows(t *testing.T) {
	cfg, err := NewConfig("ovn-default", []string{"10.16.0.0/16"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	in := Inputs{Pods: []*corev1.Pod{pod("default", "a", nil), pod("default", "b", nil)}}
	var x Engine
	first := x.Full(in, cfg, state.New(0))
	// The NB once the plan was applied: rows with strings of their own.
	have := state.New(2)
	var names []string
	for _, p := range first.Want.Ports.All() {
		row := *p
		row.Name, row.Owner, row.UUID = strings.Clone(p.Name), strings.Clone(p.Owner), "uuid-"+p.Name
		row.Addresses = []string{strings.Clone(p.Addresses[0])}
		row.PortSecurity = row.Addresses
		if strings.HasPrefix(p.Name, "b.") {
			row.EditRare(func(r *state.Rare) { r.DynamicAddresses = "0a:00:00:00:00:01 10.16.0.99" })
		}
		have.Ports.Set(row.Name, &row)
		names = append(names, p.Name)
	}
	a, b := have.Ports.Get("a.default"), have.Ports.Get("b.default")
	built := first.Want.Ports.Get("a.default")
	want, ok := x.Settle(have, append(names, "gone.default"))
	if !ok {
		t.Fatal("no result to settle")
	}
	if p := want.Ports.Get("a.default"); p != a {
		t.Errorf("port a = %p, want the NB's row %p", p, a)
	}
	for name := range want.Ports.All() {
		if name == "a.default" && unsafe.StringData(name) != unsafe.StringData(a.Name) {
			t.Error("want is not keyed by the NB row's name")
		}
	}
	if p := want.Ports.Get("b.default"); p == b || p != first.Want.Ports.Get("b.default") {
		t.Error("port b took a row that holds dynamic_addresses")
	}
	if first.Want.Ports.Get("a.default") != built {
		t.Error("Settle changed the result it was given")
	}
	for _, s := range []state.State{want, first.Want} {
		if !s.Index.Equal(state.IndexPorts(s.Ports)) {
			t.Error("the index is not the ports'")
		}
	}
	if kept, _ := x.Want(); kept.Ports.Get("a.default") != a {
		t.Error("the engine does not keep the settled result")
	}
	changed := []state.ObjectRef{{Kind: state.KindPod, Namespace: "default", Name: "b"}}
	r, why := x.Update(ObjectsOf(in), changed, cfg, have)
	if why.Gave() {
		t.Fatalf("Update gave up: %v", why)
	}
	if r.Want.Ports.Get("a.default") != a {
		t.Error("the port kept by Update is not the NB's row")
	}
	if d := Mismatch(r, Build(in, cfg, have)); d != "" {
		t.Errorf("Update after Settle differs from Build: %s", d)
	}
}

// A result whose ports are the NB's rows shares the NB snapshot's shards
// of ports and index: after a full Build over an NB that holds its result,
// and after Settle over the rows a start wrote. A shard where the NB holds
// a port of another writer's stays the result's own.
func TestResultSharesTheNBShards(t *testing.T) {
	cfg, err := NewConfig("ovn-default", []string{"10.16.0.0/16"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var in Inputs
	for i := range 600 {
		in.Pods = append(in.Pods, pod("default", fmt.Sprint("p", i), nil))
	}
	foreign := &state.Port{Name: "router-port", Switch: "ovn-default"}
	shared := func(what string, want, have state.State) {
		t.Helper()
		n := 0
		for i := range state.NumShards {
			w, h := want.Index.Shard(i), have.Index.Shard(i)
			is := len(w) > 0 && len(h) > 0 && &w[0] == &h[0]
			if len(w) > 0 && is == (state.NameHash(foreign.Name)>>56 == uint64(i)) {
				t.Errorf("%s: shard %d shared %v", what, i, is)
			}
			if is {
				n++
			}
		}
		if n == 0 || !want.Index.Equal(state.IndexPorts(want.Ports)) {
			t.Errorf("%s: %d shards shared, the index the ports' %v", what, n, want.Index.Equal(state.IndexPorts(want.Ports)))
		}
	}
	// rows is the NB once want was written: rows of their own, and the
	// port of another writer's.
	rows := func(want state.State) (state.State, []string) {
		have := state.New(want.Ports.Len() + 1)
		var names []string
		for name, p := range want.Ports.All() {
			row := *p
			row.Name, row.UUID = strings.Clone(name), "uuid-"+name
			have.Ports.Set(row.Name, &row)
			names = append(names, name)
		}
		have.Ports.Set(foreign.Name, foreign)
		have.Index = state.IndexPorts(have.Ports)
		return have, names
	}
	var x Engine
	have, names := rows(x.Full(in, cfg, state.New(0)).Want)
	settled, _ := x.Settle(have, names)
	shared("settled", settled, have)
	var y Engine
	shared("a full Build over the rows", y.Full(in, cfg, have).Want, have)
}
