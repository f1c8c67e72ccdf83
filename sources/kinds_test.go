package sources

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ovn-sync/ovn-sync/desired"
)

// TestKinds checks the table of kinds against every place that must know
// of a kind: desired declares its scope, its objects go in a field of
// Inputs of their own (and every field of Inputs is some kind's), a
// manifest of one is read into that field, the informers watch it, and a
// custom kind has a list kind for the fake dynamic client. A kind added to
// the table and missed in one of those places fails here; deploy's
// TestRBACLeastPrivilege fails when the chart's ClusterRole does not let
// ovn-sync list and watch it.
func TestKinds(t *testing.T) {
	fields := map[string]Kind{}
	for _, d := range kindDefs {
		if !desired.Scoped(string(d.kind)) {
			t.Errorf("%s: desired declares no scope for it (desired/scopes.go)", d.kind)
		}
		var in desired.Inputs
		var bad []Unreadable
		obj := d.newObj()
		d.collect(&in, []any{obj}, &bad)
		set := setFields(in)
		if len(set) != 1 || len(bad) > 0 {
			t.Errorf("%s: an object collected sets fields %v of Inputs (unreadable %v); want one", d.kind, set, bad)
			continue
		}
		if k, ok := fields[set[0]]; ok {
			t.Errorf("%s and %s both go in Inputs.%s", k, d.kind, set[0])
		}
		fields[set[0]] = d.kind

		gv := d.resource.GroupVersion().String()
		doc := fmt.Sprintf("apiVersion: %s\nkind: %s\nmetadata: {name: x, namespace: ns}\n", gv, d.kind)
		got, _, err := ReadManifestsStdin([]string{"-"}, strings.NewReader(doc))
		if err != nil {
			t.Errorf("%s: a manifest of one: %v", d.kind, err)
		} else if s := setFields(got); len(s) != 1 || s[0] != set[0] {
			t.Errorf("%s: a manifest of one fills %v, want %s", d.kind, s, set[0])
		}
		if _, ok := ListKinds[d.resource]; !d.typed && !ok {
			t.Errorf("%s: no list kind for %s", d.kind, d.resource)
		}
	}
	for _, f := range reflect.VisibleFields(reflect.TypeFor[desired.Inputs]()) {
		// StoredPods, StoredVMs and StoredVMIs hold pods, VMs and VMIs,
		// as Pods, VirtualMachines and VirtualMachineInstances do: listed
		// only from a store that keeps them in their stored form
		// (TestStoredPodsListed, TestStoredKubeVirtListed).
		if _, ok := fields[f.Name]; !ok && !strings.HasPrefix(f.Name, "Stored") {
			t.Errorf("Inputs.%s is no kind's: add the kind to kindDefs", f.Name)
		}
	}
	// Every kind read whole by a Build is what desired's Objects hands out
	// whole, and no other.
	for _, d := range kindDefs {
		var in desired.Inputs
		var bad []Unreadable
		d.collect(&in, []any{d.newObj()}, &bad)
		if whole := len(setFields(desired.ObjectsOf(in).Networks())) > 0; whole != d.whole {
			t.Errorf("%s: read whole in the table %v, by desired.Objects.Networks %v", d.kind, d.whole, whole)
		}
	}
	// The informers watch every kind, each custom one once its resource
	// is served.
	f := newFakes(t, false, false)
	f.disco.Resources = nil
	served := map[string]*metav1.APIResourceList{}
	for _, d := range kindDefs {
		gv := d.resource.GroupVersion().String()
		if d.typed {
			continue
		}
		if served[gv] == nil {
			served[gv] = &metav1.APIResourceList{GroupVersion: gv}
			f.disco.Resources = append(f.disco.Resources, served[gv])
		}
		served[gv].APIResources = append(served[gv].APIResources, metav1.APIResource{Name: d.resource.Resource, Kind: string(d.kind), Namespaced: true})
	}
	start(t, f)
	f.inf.mu.Lock()
	defer f.inf.mu.Unlock()
	for _, d := range kindDefs {
		if f.inf.inf[d.kind] == nil {
			t.Errorf("%s: no informer watches it", d.kind)
		}
	}
}

// setFields names the fields of in that hold objects.
func setFields(in desired.Inputs) []string {
	var out []string
	v := reflect.ValueOf(in)
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() == reflect.Interface && !f.IsNil() || f.Kind() == reflect.Slice && f.Len() > 0 {
			out = append(out, v.Type().Field(i).Name)
		}
	}
	return out
}
