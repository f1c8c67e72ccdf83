package sources

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/ovn-sync/ovn-sync/desired"
)

// manyDocuments is a YAML stream of n documents over several chunks:
// pods written as kubectl prints them and in flow style (which the quick
// way leaves to the general one), VMs, skipped kinds, empty documents and a
// List. Document i is replaced by bad[i] when given.
func manyDocuments(n int, bad map[int]string) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString("---\n")
		}
		if doc, ok := bad[i]; ok {
			b.WriteString(doc)
			continue
		}
		switch i % 7 {
		case 0, 1, 2:
			fmt.Fprintf(&b, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p-%d\n  namespace: ns-%d\n  labels:\n    app: web\nspec:\n  nodeName: node-%d\n  containers:\n  - name: c\n    image: nginx:1.25\nstatus:\n  phase: Running\n", i, i%5, i%3)
		case 3:
			fmt.Fprintf(&b, "apiVersion: v1\nkind: Pod\nmetadata: {name: f-%d, annotations: {ovn.kubernetes.io/ip_address: 10.16.0.%d}}\nspec: {nodeName: node-1}\n", i, i%250+2)
		case 4:
			fmt.Fprintf(&b, "apiVersion: v1\nkind: Service\nmetadata:\n  name: s-%d\n", i)
		case 5:
			b.WriteString("# nothing here\n")
		case 6:
			fmt.Fprintf(&b, "apiVersion: v1\nkind: List\nitems:\n- apiVersion: kubevirt.io/v1\n  kind: VirtualMachine\n  metadata:\n    name: vm-%d\n  spec:\n    runStrategy: Halted\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: cm-%d\n", i, i)
		}
	}
	return b.String()
}

// decodeYAML on many workers gives what reading the documents one by one
// gives: the same objects in the same order, the same notes, and the error
// of the first document that fails, named by its index.
func TestDecodeYAMLAsOneByOne(t *testing.T) {
	n := 5*chunkDocs + 3
	cases := map[string]map[int]string{
		"good": nil,
		"bad documents": {
			3*chunkDocs + 5: "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {nodeName: [}\n",
			4*chunkDocs + 1: "kind: Pod\napiVersion: v1\nmetadata:\n  name: y\nspec:\n  hostNetwork: maybe\n",
		},
		"no kind, then a bad document": {
			2*chunkDocs + 9: "metadata:\n  name: z\n",
			4*chunkDocs + 1: "a: [\n",
		},
		"a type error after a bad separator": {
			chunkDocs + 2: "apiVersion: v1\nkind: Pod\nmetadata:\n  name: w\nspec:\n  nodeName: 5\n",
		},
		"a bad separator": {},
		"a duplicate within a file": {
			3 * chunkDocs: "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p-0\n  namespace: ns-0\n",
		},
	}
	for name, bad := range cases {
		data := []byte(manyDocuments(n, bad))
		if strings.Contains(name, "separator") {
			data = []byte(strings.Replace(string(data), "---\n", "--- x\n", 3*chunkDocs))
			data = []byte(strings.Replace(string(data), "--- x\n", "---\n", 3*chunkDocs-1))
		}
		var want desired.Inputs
		wantNotes, wantErr := decodeStream("m.yaml", data, &want)
		for _, workers := range []int{1, 2, 4, 9} {
			var got desired.Inputs
			gotNotes, gotErr := decodeYAML("m.yaml", data, &got, workers)
			if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
				t.Errorf("%s, %d workers: error %v, want %v", name, workers, gotErr, wantErr)
			}
			if wantErr != nil {
				continue
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s, %d workers: objects differ from reading one by one (%d pods, want %d)", name, workers, len(got.Pods), len(want.Pods))
			}
			if !reflect.DeepEqual(gotNotes, wantNotes) {
				t.Errorf("%s, %d workers: notes %v, want %v", name, workers, gotNotes, wantNotes)
			}
		}
		if name == "good" && (wantErr != nil || len(want.Pods) < 2*chunkDocs || len(want.VirtualMachines) == 0 || len(wantNotes) == 0) {
			t.Fatalf("good stream: %v, %d pods, %d VMs, %d notes", wantErr, len(want.Pods), len(want.VirtualMachines), len(wantNotes))
		}
		if name == "a bad separator" && !strings.Contains(fmt.Sprint(wantErr), fmt.Sprintf("document %d: invalid Yaml document separator", 3*chunkDocs-1)) {
			t.Errorf("%s: reading one by one gave %v", name, wantErr)
		}
		if name != "good" && name != "a duplicate within a file" && wantErr == nil {
			t.Errorf("%s: reading one by one found no error", name)
		}
	}
}

// ReadManifests over a file of many documents reports the duplicate and
// the failing document as before, by file and index.
func TestReadManifestsManyDocuments(t *testing.T) {
	dir := t.TempDir()
	n := 3*chunkDocs + 1
	p := write(t, dir, "many.yaml", manyDocuments(n, map[int]string{2*chunkDocs + 7: "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p-0\n  namespace: ns-0\n"}))
	_, _, err := ReadManifests([]string{p})
	if want := "Pod ns-0/p-0 is defined twice: in " + p + " and in " + p; err == nil || err.Error() != want {
		t.Errorf("ReadManifests: %v, want %s", err, want)
	}
	write(t, dir, "many.yaml", manyDocuments(n, map[int]string{2*chunkDocs + 7: "apiVersion: v1\nkind: Pod\nmetadata:\n  name: [\n"}))
	_, _, err = ReadManifests([]string{p})
	if want := fmt.Sprintf("%s: document %d: ", p, 2*chunkDocs+7); err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("ReadManifests: %v, want an error starting %q", err, want)
	}
}
