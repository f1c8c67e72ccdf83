package sources

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ovn-sync/ovn-sync/desired"
)

// kubectlPod is a Deployment's running pod as `kubectl get pod -o yaml`
// prints it, without managed fields.
func kubectlPod(i int) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  creationTimestamp: "2026-11-01T00:00:00Z"
  generateName: app-%[1]d-7d9f8b6c5d-
  labels:
    app: app-%[1]d
    pod-template-hash: 7d9f8b6c5d
  name: app-%[1]d-7d9f8b6c5d-%05[2]x
  namespace: ns-%[3]d
  ownerReferences:
  - apiVersion: apps/v1
    blockOwnerDeletion: true
    controller: true
    kind: ReplicaSet
    name: app-%[1]d-7d9f8b6c5d
    uid: 6f1c0000-1b2e-4c3d-9e8f-%012[2]x
  resourceVersion: "%[2]d"
  uid: 0b1c0000-1b2e-4c3d-9e8f-%012[2]x
spec:
  containers:
  - image: registry.example.com/app-%[1]d:1.4.2
    imagePullPolicy: IfNotPresent
    name: app
    ports:
    - containerPort: 8080
      name: http
      protocol: TCP
    resources:
      requests:
        cpu: 100m
        memory: 128Mi
  nodeName: node-%[4]d
  restartPolicy: Always
  serviceAccountName: default
status:
  conditions:
  - lastProbeTime: null
    lastTransitionTime: "2026-11-01T00:00:00Z"
    status: "True"
    type: Ready
  hostIP: 192.168.0.%[4]d
  phase: Running
  startTime: "2026-11-01T00:00:00Z"
`, i/10, i, i%97, i%250+1)
}

// BenchmarkReadManifests reads one multi-document file of kubectl-style
// pods.
func BenchmarkReadManifests(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			docs := make([]string, n)
			for i := range docs {
				docs[i] = kubectlPod(i)
			}
			p := filepath.Join(b.TempDir(), "pods.yaml")
			data := strings.Join(docs, "---\n")
			if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				in, _, err := ReadManifests([]string{p})
				if err != nil || len(in.Pods) != n {
					b.Fatalf("ReadManifests: %d pods, %v", len(in.Pods), err)
				}
			}
		})
	}
}

// BenchmarkYAMLToJSON converts one kubectl-style pod document to JSON both
// ways, side by side: simpleYAML (the plain subset, fastyaml.go) and the
// general way ReadManifests takes for any other document (go-yaml, then
// encoding/json). The ratio is what fastyaml.go buys.
func BenchmarkYAMLToJSON(b *testing.B) {
	doc := []byte(kubectlPod(12345))
	want, err := general(doc)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("simple", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		b.ReportAllocs()
		for b.Loop() {
			if out, _, ok := simpleYAML(doc); !ok || len(out) != len(want) {
				b.Fatalf("simpleYAML: ok %v, %d bytes, want %d", ok, len(out), len(want))
			}
		}
	})
	b.Run("general", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		b.ReportAllocs()
		for b.Loop() {
			if out, err := general(doc); err != nil || len(out) != len(want) {
				b.Fatalf("general: %v, %d bytes", err, len(out))
			}
		}
	})
}

// BenchmarkPodFromYAML reads one kubectl-style pod document into the lean
// pod ReadManifests keeps, both ways, side by side: "lean" straight from
// simpleYAML's tree (decodePlainYAML), "json" through the JSON simpleYAML
// writes and encoding/json, the way every other kind goes. The ratio is
// what reading pods straight buys a one-shot run.
func BenchmarkPodFromYAML(b *testing.B) {
	doc := []byte(kubectlPod(12345))
	b.Run("lean", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		b.ReportAllocs()
		var p yamlLines
		for b.Loop() {
			var in desired.Inputs
			if _, _, _, done := decodePlainYAML(&p, doc, &in); !done || len(in.Pods) != 1 {
				b.Fatalf("decodePlainYAML: done %v, %d pods", done, len(in.Pods))
			}
		}
	})
	b.Run("json", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		b.ReportAllocs()
		for b.Loop() {
			var in desired.Inputs
			raw, tm, ok := simpleYAML(doc)
			if !ok {
				b.Fatal("simpleYAML: not plain")
			}
			if _, err := addObject(raw, tm, &in); err != nil || len(in.Pods) != 1 {
				b.Fatalf("addObject: %v, %d pods", err, len(in.Pods))
			}
		}
	})
}
