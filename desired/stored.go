package desired

import (
	"iter"
	"maps"

	kubevirtv1 "kubevirt.io/api/core/v1"
)

// Stored lists objects of one kind kept in a form of their own, each made
// into its API object at the read: run mode's informers keep VMs and VMIs
// so (package sources), as they keep pods (PodStore). A VirtualMachine with
// its template, or a VMI, is about 1.5 KB however little it holds; a full
// pass that made every one at once would hold them all while it built.
// Build reads them by position, and keeps none: what it needs of one
// beyond the read is copied, or shared with the store. Where it reads
// every one in turn, to index them or to add a VM's ports, it reads them
// in the memory of one (Reader), and keeps nothing of one but strings and
// what it made of them.
//
// The objects a Stored lists do not change: a listing is of one moment.
type Stored[T any] interface {
	// Len is how many objects it lists.
	Len() int
	// At makes the i-th object (0 <= i < Len), shared with the store:
	// read only. Each call makes it anew.
	At(i int) T
	// Reader returns a function that makes the i-th object as At does,
	// but each in the memory of the one it made before, maps and slices
	// included: an object it makes is good only until its next call. A
	// full pass that reads 30,000 VMIs so leaves one VMI's memory behind
	// it as garbage, not 30,000 (about 2 KB each).
	Reader() func(i int) T
}

// Copies is a Stored over objs that makes a copy of an object at each
// read, as a store that keeps them in another form makes them: what tests
// of a reader of a Stored give it. A Reader makes every copy in one
// object's memory, and its annotations in one map, so that a reader that
// keeps one sees it change as the next is read.
func Copies[E any, T interface {
	*E
	DeepCopy() T
}](objs []T) Stored[T] {
	return copies[E, T](objs)
}

type copies[E any, T interface {
	*E
	DeepCopy() T
}] []T

func (s copies[E, T]) Len() int   { return len(s) }
func (s copies[E, T]) At(i int) T { return s[i].DeepCopy() }

func (s copies[E, T]) Reader() func(int) T {
	reused, ann := new(E), map[string]string{}
	return func(i int) T {
		*reused = *s[i].DeepCopy()
		// Its annotations in one map too, as a store's Reader makes them.
		if o, ok := any(reused).(annotated); ok && o.GetAnnotations() != nil {
			clear(ann)
			maps.Copy(ann, o.GetAnnotations())
			o.SetAnnotations(ann)
		}
		return reused
	}
}

type annotated interface {
	GetAnnotations() map[string]string
	SetAnnotations(map[string]string)
}

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

func (l listed[T]) all() iter.Seq2[int, T] { return positions(l.len(), l.at) }

// reader is at, but the objects Stored makes are made in the memory of
// one (Stored.Reader): each is good only until the next call.
func (l listed[T]) reader() func(int) T {
	var stored func(int) T
	if l.stored != nil {
		stored = l.stored.Reader()
	}
	return func(i int) T {
		if i < len(l.list) {
			return l.list[i]
		}
		return stored(i - len(l.list))
	}
}

// read is all through a reader: each object is good only until the next
// is yielded.
func (l listed[T]) read() iter.Seq2[int, T] { return positions(l.len(), l.reader()) }

// positions yields, for each position i below n, i and at(i).
func positions[T any](n int, at func(int) T) iter.Seq2[int, T] {
	return func(yield func(int, T) bool) {
		for i := range n {
			if !yield(i, at(i)) {
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

// ReadVMs is AllVMs, but a stored VM is made in the memory of the one
// yielded before it (Stored.Reader): good only until the next is yielded.
func (in Inputs) ReadVMs() iter.Seq2[int, *kubevirtv1.VirtualMachine] { return in.vms().read() }

// ReadVMIs is ReadVMs for VMIs.
func (in Inputs) ReadVMIs() iter.Seq2[int, *kubevirtv1.VirtualMachineInstance] {
	return in.vmis().read()
}
