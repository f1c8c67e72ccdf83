package reconcile

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ovn-sync/ovn-sync/desired"
	"github.com/ovn-sync/ovn-sync/diff"
	"github.com/ovn-sync/ovn-sync/state"
)

// editsCluster is a small cluster on small subnets, so that edits collide:
// pods with and without requests, a running VM and a stopped VM with a
// record, on the default network and a layer2 NAD.
const editsCluster = `apiVersion: k8s.cni.cncf.io/v1
kind: NetworkAttachmentDefinition
metadata: {name: blue, namespace: tenant}
spec: {config: '{"type":"ovn-k8s-cni-overlay","topology":"layer2","subnets":"192.168.0.0/28"}'}
---
apiVersion: v1
kind: Pod
metadata: {name: a, namespace: tenant, creationTimestamp: "2026-01-01T00:00:01Z", annotations: {k8s.v1.cni.cncf.io/networks: blue}}
spec: {nodeName: node-1, containers: [{name: c, image: busybox}]}
status: {phase: Running}
---
apiVersion: v1
kind: Pod
metadata: {name: b, namespace: tenant, creationTimestamp: "2026-01-01T00:00:02Z", annotations: {ovn.kubernetes.io/ip_address: 10.16.0.9}}
spec: {nodeName: node-1, containers: [{name: c, image: busybox}]}
status: {phase: Running}
---
apiVersion: v1
kind: Pod
metadata: {name: c, namespace: tenant, creationTimestamp: "2026-01-01T00:00:03Z", annotations: {k8s.v1.cni.cncf.io/networks: blue}}
spec: {nodeName: node-2, containers: [{name: c, image: busybox}]}
status: {phase: Running}
---
apiVersion: v1
kind: Pod
metadata: {name: d, namespace: tenant, creationTimestamp: "2026-01-01T00:00:04Z"}
spec: {nodeName: node-2, containers: [{name: c, image: busybox}]}
status: {phase: Running}
---
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: stopped
  namespace: tenant
  creationTimestamp: "2026-01-01T00:00:05Z"
  annotations: {blue.tenant.ovn.kubernetes.io/ip_address: 192.168.0.7, blue.tenant.ovn.kubernetes.io/mac_address: "02:00:00:00:00:07"}
spec:
  runStrategy: Halted
  template:
    spec:
      domain: {devices: {interfaces: [{name: default, masquerade: {}}, {name: blue, bridge: {}}]}}
      networks: [{name: default, pod: {}}, {name: blue, multus: {networkName: blue}}]
---
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata: {name: running, namespace: tenant, creationTimestamp: "2026-01-01T00:00:06Z"}
spec:
  runStrategy: Always
  template:
    spec:
      domain: {devices: {interfaces: [{name: default, masquerade: {}}, {name: blue, bridge: {}, macAddress: "02:00:00:00:00:99"}]}}
      networks: [{name: default, pod: {}}, {name: blue, multus: {networkName: blue}}]
---
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata:
  name: running
  namespace: tenant
  ownerReferences: [{apiVersion: kubevirt.io/v1, kind: VirtualMachine, name: running}]
spec:
  domain: {devices: {interfaces: [{name: default, masquerade: {}}, {name: blue, bridge: {}, macAddress: "02:00:00:00:00:99"}]}}
  networks: [{name: default, pod: {}}, {name: blue, multus: {networkName: blue}}]
status: {phase: Running, nodeName: node-3}
`

// FuzzOutsideEdits applies random outside edits to an NB that ovn-sync
// has converged — our ports and others' given each other's addresses, IPs
// or MACs, ports that are not ours added with addresses in use, ports
// removed, addresses moved within the subnets — and makes one pass (the
// plan carried out on a model of the NB). After it no address is held twice
// on a switch, nor by a port of ours and one that is not (unless a port
// Build must keep as it is is involved), and every row that is not ours is
// exactly as it was. `go test` runs the seeds; `make fuzz` searches.
func FuzzOutsideEdits(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 1, 2, 0, 3, 4, 1, 5, 6, 2, 7, 8})
	f.Add([]byte{3, 0, 0, 3, 1, 1, 0, 2, 3, 4, 5, 0})
	f.Add([]byte{5, 1, 3, 5, 2, 200, 0, 4, 2, 1, 6, 7})
	in := manifests(f, editsCluster)
	cfg, err := desired.NewConfig("ovn-default", []string{"10.16.0.0/28"}, []string{"10.16.0.1"})
	if err != nil {
		f.Fatal(err)
	}
	base := desired.Build(in, cfg, state.New(0))
	if len(base.Problems) > 0 {
		f.Fatalf("base cluster: %v", base.Problems)
	}
	converged := base.Want
	f.Fuzz(func(t *testing.T, data []byte) {
		have := edit(converged, data)
		r := desired.Build(in, cfg, have)
		plan := diff.Compute(r.Want, have, diff.Policy{})
		after := plan.ApplyTo(have)
		for name, p := range have.Ports.All() {
			if !p.Owned() && after.Ports.Get(name) != p {
				t.Fatalf("port %q, not ours, changed: %+v -> %+v", name, p, after.Ports.Get(name))
			}
		}
		kept := map[string]bool{}
		for _, f := range r.Ports() {
			kept[f.Port.Name] = f.Kept
		}
		if msg := heldTwice(after, kept, r.Problems); msg != "" {
			t.Fatalf("after one pass: %s\nedited NB:\n%s\nplan:\n%s\nproblems: %v", msg, dumpPorts(have), plan, r.Problems)
		}
	})
}

// edit applies the edits data draws to a copy of s. Each edit is three
// bytes: what to do, which port, and a value.
func edit(s state.State, data []byte) state.State {
	out := s.Clone()
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range out.Ports.All() {
			if !yield(n) {
				return
			}
		}
	})
	pick := func(b byte) *state.Port {
		if len(names) == 0 {
			return nil
		}
		return out.Ports.Get(names[int(b)%len(names)])
	}
	words := func(p *state.Port) []string {
		if p == nil || len(p.Addresses) == 0 {
			return nil
		}
		return strings.Fields(p.Addresses[0])
	}
	set := func(p *state.Port, w []string) {
		q := *p
		q.Addresses = []string{strings.Join(w, " ")}
		out.Ports.Set(q.Name, &q)
	}
	for i := 0; i+2 < len(data); i += 3 {
		op, p, v := data[i]%6, pick(data[i+1]), data[i+2]
		if p == nil {
			continue
		}
		src := words(pick(v))
		switch op {
		case 0: // ovn-nbctl set ... addresses='"<another port's>"'
			if src != nil {
				set(p, src)
			}
		case 1, 2: // only the IP, or only the MAC, of another port
			w := words(p)
			if len(w) > 1 && len(src) > 1 {
				w = slices.Clone(w)
				if op == 1 {
					w[1] = src[1]
				} else {
					w[0] = src[0]
				}
				set(p, w)
			}
		case 3: // a port that is not ours, on another port's addresses
			if src != nil {
				name := fmt.Sprintf("foreign-%d", i)
				out.Ports.Set(name, &state.Port{Name: name, UUID: "u-" + name, Addresses: []string{strings.Join(src, " ")}})
			}
		case 4: // deleted by hand
			out.Ports.Delete(p.Name)
		case 5: // another address of its subnet
			w := words(p)
			if len(w) > 1 {
				w = slices.Clone(w)
				ip := w[1]
				w[1] = ip[:strings.LastIndexAny(ip, ".:")+1] + fmt.Sprint(2+int(v)%13)
				set(p, w)
			}
		}
	}
	out.Index = state.Index{}
	return out
}

// heldTwice names an address held by two ports of ours on one switch, or
// by one of ours and one that is not, where neither is kept as it is. One
// of ours keeps an address beside a port that is not ours only as
// docs/addresses.md allows (its owner runs or has a record of it), with an AddressConflict
// Problem naming both.
func heldTwice(s state.State, kept map[string]bool, problems []desired.Problem) string {
	reported := func(a, b string) bool {
		return slices.ContainsFunc(problems, func(p desired.Problem) bool {
			return p.Reason == "AddressConflict" && strings.Contains(p.Message, strconv.Quote(a)) && strings.Contains(p.Message, strconv.Quote(b))
		})
	}
	type holder struct {
		name, sw string
		ours     bool
	}
	by := map[string][]holder{}
	for _, p := range s.Ports.All() {
		if len(p.Addresses) == 0 {
			continue
		}
		for _, w := range strings.Fields(p.Addresses[0]) {
			by[w] = append(by[w], holder{p.Name, p.Switch, p.Owned()})
		}
	}
	for w, hs := range by {
		for i, a := range hs {
			for _, b := range hs[i+1:] {
				if !a.ours && !b.ours || kept[a.name] || kept[b.name] {
					continue
				}
				if a.ours && b.ours && a.sw != b.sw || a.ours != b.ours && reported(a.name, b.name) {
					continue
				}
				return fmt.Sprintf("%s held by %q and %q", w, a.name, b.name)
			}
		}
	}
	return ""
}

func dumpPorts(s state.State) string {
	var lines []string
	for _, p := range s.Ports.All() {
		lines = append(lines, fmt.Sprintf("  %s %s owner=%q %q", p.Name, p.Switch, p.Owner, p.Addresses))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}
