package sources

import "testing"

// TestReadExamples keeps the demo's manifests readable.
func TestReadExamples(t *testing.T) {
	in, notes, err := ReadManifests([]string{"../examples/cluster"})
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) != 0 {
		t.Errorf("notes = %v, want none", notes)
	}
	got := [5]int{len(in.Pods), len(in.VirtualMachines), len(in.VirtualMachineInstances), len(in.Migrations), len(in.NetworkAttachmentDefinitions)}
	if want := [5]int{8, 3, 2, 1, 2}; got != want {
		t.Errorf("counts (pods, VMs, VMIs, migrations, NADs) = %v, want %v", got, want)
	}
}
