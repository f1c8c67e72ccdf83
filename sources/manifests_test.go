package sources

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadManifests(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.yaml", `
apiVersion: v1
kind: Pod
metadata: {name: web}
spec: {nodeName: node-a, containers: [{name: c, image: nginx}]}
---
apiVersion: v1
kind: Service
metadata: {name: svc}
---
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata: {name: vm1, namespace: vms}
spec:
  runStrategy: Halted
  template:
    spec:
      networks: [{name: data, multus: {networkName: tenant/data}}]
`)
	write(t, dir, "b.json", `{"apiVersion":"v1","kind":"List","items":[
 {"apiVersion":"k8s.cni.cncf.io/v1","kind":"NetworkAttachmentDefinition","metadata":{"name":"data","namespace":"tenant"},"spec":{"config":"{}"}},
 {"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstance","metadata":{"name":"vmi1","namespace":"vms"}},
 {"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstanceMigration","metadata":{"name":"mig","namespace":"vms"}},
 {"apiVersion":"kubeovn.io/v1","kind":"IP","metadata":{"name":"vm1.vms"},"spec":{"podName":"vm1","namespace":"vms","subnet":"ovn-default","v4IpAddress":"10.16.0.7","macAddress":"00:00:00:4f:7a:03","podType":"VirtualMachine"}},
 {"apiVersion":"k8s.cni.cncf.io/v1alpha1","kind":"IPAMClaim","metadata":{"name":"vm1.data"},"spec":{"network":"tenantnet","interface":""},"status":{"ips":["192.168.10.2/24"]}}]}`)
	write(t, dir, "ignored.txt", "not yaml")

	in, notes, err := ReadManifests([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Pods) != 1 || in.Pods[0].Namespace != "default" || in.Pods[0].Spec.NodeName != "node-a" {
		t.Errorf("Pods = %+v, want web in default on node-a", in.Pods)
	}
	if len(in.VirtualMachines) != 1 || in.VirtualMachines[0].Spec.Template.Spec.Networks[0].Multus.NetworkName != "tenant/data" {
		t.Errorf("VirtualMachines = %+v", in.VirtualMachines)
	}
	if len(in.IPAMClaims) != 1 || in.IPAMClaims[0].Namespace != "default" || in.IPAMClaims[0].Status.IPs[0] != "192.168.10.2/24" {
		t.Errorf("IPAMClaims = %+v, want vm1.data in default with its status.ips", in.IPAMClaims)
	}
	if len(in.NetworkAttachmentDefinitions) != 1 || len(in.VirtualMachineInstances) != 1 || len(in.Migrations) != 1 {
		t.Errorf("List items not all read: %d NADs, %d VMIs, %d migrations",
			len(in.NetworkAttachmentDefinitions), len(in.VirtualMachineInstances), len(in.Migrations))
	}
	// An IP is cluster-scoped: it is given no namespace.
	if len(in.IPs) != 1 || in.IPs[0].Name != "vm1.vms" || in.IPs[0].Namespace != "" || in.IPs[0].Spec.V4IPAddress != "10.16.0.7" {
		t.Errorf("IPs = %+v, want vm1.vms with no namespace", in.IPs)
	}
	if len(notes) != 1 || !strings.Contains(notes[0].String(), "a.yaml: document 1: skipped Service svc") {
		t.Errorf("notes = %v, want one for the Service", notes)
	}
}

func TestReadManifestsErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		body, want string
	}{
		{"apiVersion: v1\nkind: Pod\nmetadata: {name: a}\n---\nkind: [\n", "bad.yaml: document 1"},
		{"apiVersion: v1\nkind: Pod\nmetadata: {}\n", "bad.yaml: document 0: metadata.name is empty"},
		{"apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {nodeName: [n1]}\n", "bad.yaml: document 0: json: cannot unmarshal array into Go struct field .spec.nodeName of type string"},
		{"apiVersion: v1\nkind: Pod\nmetadata: {name: a, annotations: 3}\n", "bad.yaml: document 0: json: cannot unmarshal number into Go struct field ObjectMeta.metadata.annotations"},
		{"metadata: {name: a}\n", "bad.yaml: document 0: no kind"},
	} {
		p := write(t, dir, "bad.yaml", tc.body)
		_, _, err := ReadManifests([]string{p})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ReadManifests(%q) error = %v, want one containing %q", tc.body, err, tc.want)
		}
	}
	if _, _, err := ReadManifests([]string{filepath.Join(dir, "missing")}); err == nil {
		t.Errorf("ReadManifests(missing file) succeeded")
	}
	// A field ovn-sync never reads is not decoded, nor checked.
	p := write(t, dir, "unread.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containers: 3, nodeName: n1}\n")
	if in, _, err := ReadManifests([]string{p}); err != nil || len(in.Pods) != 1 || in.Pods[0].Spec.NodeName != "n1" {
		t.Errorf("ReadManifests(a pod with a malformed spec.containers) = %v, %v; want the pod on n1", in.Pods, err)
	}
}

func TestReadManifestsDuplicate(t *testing.T) {
	dir := t.TempDir()
	pod := "apiVersion: v1\nkind: Pod\nmetadata: {name: a, namespace: x}\n"
	a := write(t, dir, "a.yaml", pod)
	b := write(t, dir, "b.yaml", pod)
	_, _, err := ReadManifests([]string{a, b})
	if err == nil || !strings.Contains(err.Error(), "Pod x/a is defined twice") {
		t.Errorf("ReadManifests(same pod twice) error = %v, want 'Pod x/a is defined twice'", err)
	}
}

// TestReadManifestsStdin: "-" reads standard input, beside files and
// directories; naming it twice is an error, and so is a malformed document
// in it, named as "-".
func TestReadManifestsStdin(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: from-file}\nspec: {containers: [{name: c, image: x}]}\n")
	stdin := strings.NewReader("apiVersion: v1\nkind: Pod\nmetadata: {name: from-stdin, namespace: ns}\nspec: {containers: [{name: c, image: x}]}\n")
	in, _, err := ReadManifestsStdin([]string{dir, Stdin}, stdin)
	if err != nil {
		t.Fatalf("ReadManifestsStdin: %v", err)
	}
	if len(in.Pods) != 2 || in.Pods[0].Name != "from-file" || in.Pods[1].Name != "from-stdin" || in.Pods[1].Namespace != "ns" {
		t.Errorf("pods = %v, want from-file then from-stdin", in.Pods)
	}
	if _, _, err := ReadManifestsStdin([]string{Stdin, Stdin}, strings.NewReader("")); err == nil || !strings.Contains(err.Error(), "2 times") {
		t.Errorf("ReadManifestsStdin(-, -) = %v, want an error saying stdin is read once", err)
	}
	_, _, err = ReadManifestsStdin([]string{Stdin}, strings.NewReader("kind: Pod\napiVersion: v1\nmetadata: {name: [x]}\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "-: document 0") {
		t.Errorf("ReadManifestsStdin(malformed) = %v, want an error naming - and the document", err)
	}
	if _, _, err := ReadManifests([]string{Stdin}); err == nil {
		t.Errorf("ReadManifests(-) = nil error; only ReadManifestsStdin reads standard input")
	}
}

// TestReadManifestsKubeOVN reads kube-ovn's Subnets as kube-ovn documents
// them (fields ovn-sync does not read included), Namespaces and
// StatefulSets; cluster-scoped kinds get no namespace.
func TestReadManifestsKubeOVN(t *testing.T) {
	dir := t.TempDir()
	p := write(t, dir, "kubeovn.yaml", `apiVersion: kubeovn.io/v1
kind: Subnet
metadata:
  name: subnet1
spec:
  protocol: IPv4
  cidrBlock: 10.66.0.0/16
  excludeIps:
  - 10.66.0.1..10.66.0.10
  gateway: 10.66.0.1
  gatewayType: distributed
  natOutgoing: true
  namespaces:
  - ns1
---
apiVersion: v1
kind: Namespace
metadata:
  name: ns1
  annotations: {ovn.kubernetes.io/logical_switch: subnet1}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web, namespace: ns1}
spec: {replicas: 2, serviceName: web, selector: {matchLabels: {app: web}}, template: {metadata: {labels: {app: web}}, spec: {containers: [{name: c, image: nginx}]}}}
`)
	in, notes, err := ReadManifests([]string{p})
	if err != nil || len(notes) != 0 {
		t.Fatalf("ReadManifests = %v, notes %v", err, notes)
	}
	if len(in.Subnets) != 1 || in.Subnets[0].Namespace != "" || in.Subnets[0].Spec.CIDRBlock != "10.66.0.0/16" || in.Subnets[0].Spec.ExcludeIps[0] != "10.66.0.1..10.66.0.10" {
		t.Errorf("Subnets = %+v, want subnet1, cluster-scoped, with its spec", in.Subnets)
	}
	if len(in.Namespaces) != 1 || in.Namespaces[0].Namespace != "" || in.Namespaces[0].Annotations["ovn.kubernetes.io/logical_switch"] != "subnet1" {
		t.Errorf("Namespaces = %+v, want ns1 with its annotation", in.Namespaces)
	}
	if len(in.StatefulSets) != 1 || in.StatefulSets[0].Namespace != "ns1" || *in.StatefulSets[0].Spec.Replicas != 2 {
		t.Errorf("StatefulSets = %+v, want ns1/web with 2 replicas", in.StatefulSets)
	}
	if Count(in) != 3 {
		t.Errorf("Count = %d, want 3", Count(in))
	}
}
