package desired

import (
	"cmp"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeovnv1 "github.com/ovn-sync/ovn-sync/apis/kubeovn/v1"
	"github.com/ovn-sync/ovn-sync/state"
)

// A Namespace whose switch changes selects the owners with ports in that
// namespace, and no others: the pods and VMs there, not those of another
// namespace, nor an owner whose name is that namespace's.
func TestNamespaceScopeSelectsItsOwners(t *testing.T) {
	in := Inputs{
		Namespaces: []*corev1.Namespace{{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, {ObjectMeta: metav1.ObjectMeta{Name: "b"}}},
		Pods:       []*corev1.Pod{pod("a", "p1", nil), pod("a", "p2", nil), pod("b", "p1", nil), pod("b", "a", nil)},
	}
	b, _ := indexedBase(t, in)
	in.Namespaces[0] = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a",
		Annotations: map[string]string{NamespaceSwitchAnnotation: "elsewhere"}}}
	sel := &touched{pods: map[nsName]bool{}, groups: map[nsName]bool{}}
	b.namespaceScope(ObjectsOf(in), state.ObjectRef{Kind: kindNamespace, Name: "a"}, sel)
	if got, want := selectedPods(sel), []nsName{{"a", "p1"}, {"a", "p2"}}; !slices.Equal(got, want) || len(sel.groups) > 0 {
		t.Errorf("namespace a's switch changed: selected pods %v and groups %v, want pods %v", got, sel.groups, want)
	}
}

// A NAD or Subnet whose spec changes selects the owners with ports on its
// switch (ownersOn), and the check after the Build finds one of them that
// was not rebuilt (notRebuiltOn); a switch of no port, or none, has none.
func TestOwnersOnSwitch(t *testing.T) {
	in := Inputs{
		Namespaces: []*corev1.Namespace{{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, {ObjectMeta: metav1.ObjectMeta{Name: "b"}}},
		Subnets:    []*kubeovnv1.Subnet{subnet1([]string{"b"})},
		Pods:       []*corev1.Pod{pod("a", "p1", nil), pod("b", "p1", nil), pod("b", "p2", nil)},
	}
	b, r := indexedBase(t, in)
	if p := r.Want.Ports.Get("p1.b"); p == nil || p.Switch != "sub1" {
		t.Fatalf("b/p1's port is %v, want one on sub1", p)
	}
	sel := &touched{pods: map[nsName]bool{}, groups: map[nsName]bool{}}
	b.ownersOn("sub1", sel)
	if got, want := selectedPods(sel), []nsName{{"b", "p1"}, {"b", "p2"}}; !slices.Equal(got, want) {
		t.Errorf("owners on sub1: %v, want %v", got, want)
	}
	for _, tc := range []struct {
		sw      string
		rebuilt []string
		want    []string // any of these; none when empty
	}{
		{"sub1", nil, []string{"Pod/b/p1", "Pod/b/p2"}},
		{"sub1", []string{"Pod/b/p1"}, []string{"Pod/b/p2"}},
		{"sub1", []string{"Pod/b/p1", "Pod/b/p2"}, nil},
		{"ovn-default", []string{"Pod/b/p1", "Pod/b/p2"}, []string{"Pod/a/p1"}},
		{"", nil, nil},
		{"nowhere", nil, nil},
	} {
		owners := map[string]bool{}
		for _, id := range tc.rebuilt {
			owners[id] = true
		}
		if got := b.notRebuiltOn(tc.sw, owners); got == "" && len(tc.want) > 0 || got != "" && !slices.Contains(tc.want, got) {
			t.Errorf("notRebuiltOn(%q, %v) = %q, want one of %v", tc.sw, tc.rebuilt, got, tc.want)
		}
	}
}

// indexedBase is the engine's base after a full Build of in, indexed as
// for the Updates that follow, with that Build's result.
func indexedBase(t *testing.T, in Inputs) (*base, Result) {
	t.Helper()
	cfg, err := NewConfig("ovn-default", []string{"10.16.0.0/16"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := newBase(cfg)
	r := b.rebuildAll(in, cfg, state.New(0))
	b.index()
	return b, r
}

// selectedPods are the pod owners sel selected, sorted.
func selectedPods(sel *touched) []nsName {
	return slices.SortedFunc(maps.Keys(sel.pods), func(x, y nsName) int {
		return cmp.Or(strings.Compare(x.ns, y.ns), strings.Compare(x.name, y.name))
	})
}

// readLookups records each owner once for each object it looked up, what
// an object had before kept: lookups repeat within a result (an owner
// naming one NAD on two interfaces) and across results (an owner rebuilt).
func TestReadLookups(t *testing.T) {
	b := newBase(Config{})
	nad, claim := nsName{"tenant", "blue"}, nsName{"tenant", "vm1"}
	b.readLookups([]lookup{{kindNAD, nad, "Pod/tenant/a"}, {kindNAD, nad, "Pod/tenant/b"}, {kindNAD, nad, "Pod/tenant/a"},
		{state.KindIPAMClaim, claim, "VirtualMachine/tenant/vm1"}})
	b.readLookups([]lookup{{kindNAD, nad, "Pod/tenant/b"}, {kindNAD, nad, "Pod/tenant/c"}, {kindNAD, nad, "Pod/tenant/c"}})
	if got, want := b.readers[kindNAD][nad], []string{"Pod/tenant/a", "Pod/tenant/b", "Pod/tenant/c"}; !slices.Equal(got, want) {
		t.Errorf("readers of the NAD = %v, want %v", got, want)
	}
	if got, want := b.readers[state.KindIPAMClaim][claim], []string{"VirtualMachine/tenant/vm1"}; !slices.Equal(got, want) {
		t.Errorf("readers of the claim = %v, want %v", got, want)
	}
	if got := b.readers[kindNAD][claim]; got != nil {
		t.Errorf("the claim is read as a NAD by %v", got)
	}
}

// An owner's base is "<name>.<ns>" of its id "<Kind>/<ns>/<name>", as
// ownerNames makes it; isBase tells it without making it.
func TestOwnerBase(t *testing.T) {
	for _, c := range []struct {
		id, name string
		base     bool
	}{
		{"Pod/shop/web-0", "web-0.shop", true},
		{"VirtualMachine/tenant-a/db", "db.tenant-a", true},
		{"VirtualMachineInstance/tenant-a/db", "db.tenant-a.blue", false},
		{"Pod/shop/web-0", "web-0.sho", false},
		{"Pod/shop/web-0", "web-1.shop", false},
		{"Pod/shop/web-0", "web-0-shop", false},
		{"Pod/a.b/c", "c.a.b", true},
		{"Pod/a/b.c", "b.c.a", true},
	} {
		if got := isBase(c.name, c.id); got != c.base {
			t.Errorf("isBase(%q, %q) = %v, want %v", c.name, c.id, got, c.base)
		}
		if c.base && baseOf(c.id) != c.name {
			t.Errorf("baseOf(%q) = %q, want %q", c.id, baseOf(c.id), c.name)
		}
	}
	kind, ns, name := "VirtualMachine", "tenant-a", "db"
	id, base := (&builder{}).ownerNames(kind, ns, name)
	if baseOf(id) != base || !isBase(base, id) {
		t.Errorf("ownerNames gives %q, %q; baseOf gives %q", id, base, baseOf(id))
	}
}
