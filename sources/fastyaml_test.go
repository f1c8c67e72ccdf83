package sources

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ovn-sync/ovn-sync/desired"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// general is the JSON of one YAML document the way decodeStream reads it.
func general(doc []byte) ([]byte, error) {
	var raw json.RawMessage
	err := utilyaml.NewYAMLToJSONDecoder(bytes.NewReader(doc)).Decode(&raw)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return raw, err
}

// checkSimple fails when simpleYAML takes doc and gives other JSON
// than the general way, or takes a document the general way refuses.
func checkSimple(t *testing.T, name string, doc []byte) bool {
	t.Helper()
	fast, tm, ok := simpleYAML(doc)
	if !ok {
		return false
	}
	want, err := general(doc)
	if err != nil {
		t.Errorf("%s: simpleYAML(%q) = %s, but the general way fails: %v", name, doc, fast, err)
		return true
	}
	if len(want) == 0 {
		want = []byte("null")
	}
	if !bytes.Equal(fast, want) {
		t.Errorf("%s: simpleYAML(%q) =\n%s\nwant\n%s", name, doc, fast, want)
	}
	// The apiVersion and kind it gives are what json.Unmarshal reads.
	var wantTM metav1.TypeMeta
	if err := json.Unmarshal(want, &wantTM); err != nil {
		if tm != nil {
			t.Errorf("%s: simpleYAML(%q) gives the type meta %+v, but json.Unmarshal fails: %v", name, doc, *tm, err)
		}
	} else if tm != nil && *tm != wantTM {
		t.Errorf("%s: simpleYAML(%q) gives the type meta %+v, json.Unmarshal %+v", name, doc, *tm, wantTM)
	}
	checkLeanPod(t, name, doc, want)
	return true
}

// reused parses every document checkLeanPod reads, as a worker of
// decodeYAML reuses its room for each document.
var reused yamlLines

// checkLeanPod fails when decodePlainYAML reads doc straight into a pod
// other than the one the JSON way reads from want, its JSON, or reads one
// where the JSON way fails.
func checkLeanPod(t *testing.T, name string, doc, want []byte) {
	t.Helper()
	var lean desired.Inputs
	if _, _, _, done := decodePlainYAML(&reused, doc, &lean); !done {
		return
	}
	var viaJSON desired.Inputs
	if _, err := addObject(want, nil, &viaJSON); err != nil {
		t.Errorf("%s: read straight into pod %+v, but the JSON way fails: %v", name, lean.Pods, err)
		return
	}
	if !reflect.DeepEqual(lean, viaJSON) {
		t.Errorf("%s: read straight into\n%+v\nthe JSON way\n%+v", name, lean.Pods, viaJSON.Pods)
	}
}

// simpleCases are documents at and around the edges of the plain subset.
var simpleCases = []string{
	"a: 1\nb: -2\nc: 0\nd: -0\ne: 007\nf: 1.5\ng: 1e3\nh: 0x1F\ni: 1_000\nj: +3\n",
	"a: yes\n", "a: no\n", "a: on\n", "a: Off\n", "a: y\n", "a: N\n", "a: True\n", "a: NULL\n", "a: ~\n", "a: null\n", "a:\n", "a: .inf\n", "a: -.Inf\n", ".nan: 1\n",
	"a: 007\n", "a: -0\n", "a: 0\n", "a: -7\n", "a: 08\n", "yes: 1\n", "y: 1\n", "on: 2\n", "null: 1\n", "<<: {a: 1}\n", "1: a\n", "true: b\n",
	"a: 2026-11-01\n", "a: 2026-11-01T00:00:00Z\n", "a: \"2026-11-01T00:00:00Z\"\n", "a: 2001-12-14 21:59:43.10 -5\n", "a: 12:30\n", "a: 1:20:30\n",
	"a: 10.16.0.1\n", "a: fd00::1\n", "a: 100m\n", "a: 128Mi\n", "a: 1.4.2\n", "a: nginx:1.25\n", "a: http://x/y?z=1#f\n", "a: b #c\n", "a: b#c\n",
	"a: 'it''s'\n", "a: \"q\\\"x\"\n", "a: \"<&>\"\n", "a: x<y\n", "a: '\"'\n", "'k': v\n", "\"k\": v\n", "'y': v\n", "a: 'x' #c\n", "a: 'x\n  y'\n",
	"a: {}\nb: []\nc: {x: 1}\nd: [1, 2]\n", "a: |\n  x\n", "a: >\n  x\n", "a: &x 1\nb: *x\n", "a: !!str 1\n", "? a\n: b\n",
	"a: b\n  c\n", "a:\n  b\n", "a: 1\na: 2\n", "a: 1\n'a': 2\n", "b: 1\na: 2\nA: 3\n_: 4\n", "a<: 1\na=: 2\n", "a\tb: 1\n", "a: b\r\n", "a: é\n",
	"a:\n- 1\n- x\n-\n- - 2\n  - 3\n- k: v\n  l: w\n-   m: 1\n    n: 2\n", "a:\n  - b\n  -  c\n", "- a\n- b\n", "a:\n- b\n c: 1\n",
	"# c\na: 1 # c\n", "# only a comment\n", "\n\n", "  a: 1\n", "a: 1\n  # indented comment\nb: 2\n", "a: - b\n", "a: -b\n", "a: -\n",
	"a: ? b\n", "a: :b\n", "a: b:\n", "a: b: c\n", "a: [\n", "a: }\n", "a: %x\n", "a: @x\n", "a: `x\n", "a:b\n", "a :b\n", "a  : b\n", "a:  b\n",
	"apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  labels:\n    app.kubernetes.io/name: web\nspec:\n  nodeName: n1\n  hostNetwork: false\nstatus:\n  phase: Running\n",
	strings.Repeat("k", 1024) + ": 1\n", strings.Repeat("k", 1025) + ": 1\n", "'" + strings.Repeat("k", 1022) + "': 1\n", "'" + strings.Repeat("k", 1023) + "': 1\n",
	"a:\n- " + strings.Repeat("k", 1024) + ": 1\n", "a:\n- " + strings.Repeat("k", 1025) + ": 1\n",
	"kind: Pod\n", "apiVersion: v1\n", "kind: null\napiVersion: ~\n", "kind: 5\n", "kind: true\n", "kind: \"5\"\n", "kind: {}\n", "kind: []\n",
	"kind:\n  a: b\n", "kind:\n- Pod\n", "Kind: Pod\n", "KIND: Pod\nkind: VM\n", "apiversion: v1\nkind: Pod\n", "kind: Pod\nApiVersion: 7\n", "- kind: Pod\n",
	"apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  NodeName: n1\n",
	"apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  nodeName: 5\n",
	"apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  nodeName: null\n  hostNetwork: true\nstatus: null\n",
	"apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  hostNetwork: \"true\"\n",
	"apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  labels: 5\n",
	"apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  Namespace: x\n",
	"apiVersion: v1\nkind: Pod\nmetadata: []\n",
	// Every field of the metadata read straight, and their edges.
	"apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: null\n  generateName: p-\n  uid: u1\n  resourceVersion: \"5\"\n" +
		"  generation: 3\n  creationTimestamp: \"2026-11-01T00:00:00Z\"\n  deletionTimestamp: \"2026-11-01T00:00:30+02:00\"\n" +
		"  deletionGracePeriodSeconds: 30\n  finalizers:\n  - a/b\n  labels: {}\n  annotations:\n    a: \"1\"\n" +
		"    kubectl.kubernetes.io/last-applied-configuration: x\n  ownerReferences:\n  - apiVersion: apps/v1\n    kind: ReplicaSet\n" +
		"    name: r\n    uid: u0\n    controller: null\n    blockOwnerDeletion: false\n    extra: 1\n  - {}\nspec: {}\nstatus: {}\n",
	"apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  deletionTimestamp: null\n  deletionGracePeriodSeconds: null\n  labels: null\n  finalizers: []\n  ownerReferences: []\n  other: 1\n",
	"apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  generation: \"3\"\n",
	"apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  creationTimestamp: \"yesterday\"\n",
	"apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  labels:\n    a: 1\n",
	"apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  labels:\n    a: null\n",
	"apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  finalizers:\n  - null\n",
	"apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  ownerReferences:\n  - Name: r\n",
	"apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  ownerReferences:\n  - controller: \"true\"\n",
	"apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  ownerReferences:\n  - null\n",
	"apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  managedFields: []\n",
	"apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  UID: u\n",
	"apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  selfLink: /api/v1/namespaces/default/pods/p\n",
	"apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  deletionTimestamp: 5\n",
	"apiVersion: v1\nkind: Pod\nMetadata:\n  name: p\n",
	"apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nstatus:\n  phase: [Running]\n",
	"apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations:\n    kubectl.kubernetes.io/last-applied-configuration: x\n    a: b\n",
	"apiVersion: v1\nkind: Pod\nmetadata:\n  name: \"\"\n",
	"a: 123456789012345678\nb: 1234567890123456789\nc: 99999999999999999999\n",
	"a: 10.16.0.5\nb: 1.2\nc: 1..2\nd: .5.\ne: 0x1.8p1\nf: 1.2e3.4\ng: 1_0.5\nh: +.5\ni: 0x1.p1\n", "a: \"\"\nb: ''\n", "a: ' x '\n", "a: x \n", "-\n", "- \n", "---\n", "...\n", "%YAML 1.1\n",
}

func TestSimpleYAMLMatchesGeneral(t *testing.T) {
	for i, c := range simpleCases {
		checkSimple(t, fmt.Sprint("case ", i), []byte(c))
	}
	// Every manifest in the repository, document by document.
	taken, all := 0, 0
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if ext := filepath.Ext(path); d.IsDir() || (ext != ".yaml" && ext != ".yml") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		docs, _ := splitYAML(data)
		for j, doc := range docs {
			all++
			if checkSimple(t, fmt.Sprint(path, " document ", j), doc) {
				taken++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("simpleYAML took %d of %d documents of the repository's manifests", taken, all)
}

// The pods kubectl prints take the quick way.
func TestSimpleYAMLTakesKubectlPods(t *testing.T) {
	doc := `apiVersion: v1
kind: Pod
metadata:
  annotations:
    k8s.v1.cni.cncf.io/networks: tenant/blue
  creationTimestamp: "2026-11-01T00:00:00Z"
  labels:
    app: web
    pod-template-hash: "5d8f"
  name: web-5d8f-x2x
  namespace: default
  ownerReferences:
  - apiVersion: apps/v1
    blockOwnerDeletion: true
    controller: true
    kind: ReplicaSet
    name: web-5d8f
    uid: 6f1c0000-1b2e-4c3d-9e8f-000000000000
  resourceVersion: "1000"
  uid: 0b1c0000-1b2e-4c3d-9e8f-000000000000
spec:
  containers:
  - image: nginx:1.25
    name: web
    ports:
    - containerPort: 8080
      protocol: TCP
    resources:
      requests:
        cpu: 100m
        memory: 128Mi
  nodeName: node-1
  tolerations:
  - effect: NoExecute
    key: node.kubernetes.io/not-ready
    operator: Exists
    tolerationSeconds: 300
status:
  conditions:
  - lastProbeTime: null
    lastTransitionTime: "2026-11-01T00:00:00Z"
    status: "True"
    type: Ready
  hostIP: 192.168.0.1
  phase: Running
  podIP: 10.16.0.5
  qosClass: Burstable
`
	if !checkSimple(t, "kubectl pod", []byte(doc)) {
		t.Errorf("simpleYAML does not take a pod as kubectl prints it")
	}
	if strings.Contains(doc, "\t") {
		t.Fatal("tab in the test document")
	}
}

func FuzzSimpleYAML(f *testing.F) {
	for _, c := range simpleCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		if bytes.Contains(doc, []byte("\n---")) || bytes.HasPrefix(doc, []byte("---")) {
			return // not one document
		}
		checkSimple(t, "fuzz", doc)
	})
}
