package desired

import (
	"iter"

	kubevirtv1 "kubevirt.io/api/core/v1"
)

// Stored lists objects of one kind kept in a form of their own, each made
// into its API object at the read: run mode's informers keep VMs and VMIs
// so (package sources), as they keep pods (PodStore). A VirtualMachine with
// its template, or a VMI, is about 1.5 KB however little it holds; a full
// pass that made every one at once would hold them all while it built.
// Build reads them by position, and keeps none: what it needs of one
// beyond the read is copied, or shared with the store.
//
// The objects a Stored lists do not change: a listing is of one moment.
type Stored[T any] interface {
	// Len is how many objects it lists.
	Len() int
	// At makes the i-th object (0 <= i < Len), shared with the store:
	// read only. Each call makes it anew.
	At(i int) T
}

// Copies is a Stored over objs that makes a copy of an object at each
// read, as a store that keeps them in another form makes them: what tests
// of a reader of a Stored give it.
func Copies[T interface{ DeepCopy() T }](objs []T) Stored[T] { return copies[T](objs) }

type copies[T interface{ DeepCopy() T }] []T

func (s copies[T]) Len() int   { return len(s) }
func (s copies[T]) At(i int) T { return s[i].DeepCopy() }

// listed is a kind's objects in Inputs: those of its list, then those its
// Stored makes. An object's position is its index among both.
type listed[T any] struct {
	list   []T
	stored Stored[T]
}

func (l listed[T]) len() int {
	n := len(l.list)
	if l.stored != nil {
		n += l.stored.Len()
	}
	return n
}

func (l listed[T]) at(i int) T {
	if i < len(l.list) {
		return l.list[i]
	}
	return l.stored.At(i - len(l.list))
}

func (l listed[T]) all() iter.Seq2[int, T] {
	return func(yield func(int, T) bool) {
		for i := range l.len() {
			if !yield(i, l.at(i)) {
				return
			}
		}
	}
}

func (in Inputs) vms() listed[*kubevirtv1.VirtualMachine] {
	return listed[*kubevirtv1.VirtualMachine]{in.VirtualMachines, in.StoredVMs}
}

func (in Inputs) vmis() listed[*kubevirtv1.VirtualMachineInstance] {
	return listed[*kubevirtv1.VirtualMachineInstance]{in.VirtualMachineInstances, in.StoredVMIs}
}

// VMCount is how many VMs in holds, in VirtualMachines and StoredVMs.
func (in Inputs) VMCount() int { return in.vms().len() }

// VMICount is how many VMIs in holds, in VirtualMachineInstances and
// StoredVMIs.
func (in Inputs) VMICount() int { return in.vmis().len() }

// AllVMs yields in's VMs with their positions: VirtualMachines, then
// StoredVMs', each made at the read.
func (in Inputs) AllVMs() iter.Seq2[int, *kubevirtv1.VirtualMachine] { return in.vms().all() }

// AllVMIs is AllVMs for VMIs.
func (in Inputs) AllVMIs() iter.Seq2[int, *kubevirtv1.VirtualMachineInstance] {
	return in.vmis().all()
}
