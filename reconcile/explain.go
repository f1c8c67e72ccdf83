package reconcile

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/ovn-sync/ovn-sync/desired"
	"github.com/ovn-sync/ovn-sync/diff"
	"github.com/ovn-sync/ovn-sync/state"
)

// Explanation is what ovn-sync explain prints for one owner: its ports, and
// for each address where it came from, the chassis and why, the changes a
// pass would make, the changes waiting for a restart and the problems
// that concern it.
type Explanation struct {
	Owner    state.ObjectRef   `json:"owner"`
	Ports    []PortExplanation `json:"ports"`
	Pending  []desired.Problem `json:"pending"`
	Problems []desired.Problem `json:"problems"`
}

// PortExplanation is one port of an owner.
type PortExplanation struct {
	Name     string `json:"name"`
	Switch   string `json:"switch"`
	Network  string `json:"network"`
	Provider string `json:"provider,omitempty"`
	// Addresses is the port's addresses column as wanted; Sources says
	// where each address came from (empty when the port is kept as the NB
	// has it: Kept).
	Addresses []string              `json:"addresses"`
	Sources   []desired.AddressFact `json:"sources"`
	Kept      bool                  `json:"kept,omitempty"`
	// Chassis is options:requested-chassis and why ("" when unset).
	Chassis string `json:"chassis,omitempty"`
	// DHCP lists the DHCP_Options rows the port refers to (native DHCP on
	// its network), IPv4's first; empty when its network has none.
	DHCP []DHCPExplanation `json:"dhcp"`
	// Change is what a pass would do to the row: "none", "create",
	// "update: <fields>", or "delete" for a port of the owner's that is no
	// longer wanted.
	Change string `json:"change"`
}

// DHCPExplanation is one DHCP_Options row a port refers to: what the guest
// is offered beside the port's address, and what a pass would do to the
// row ("none", "create", "update", or "kept as the NB has it" when the
// port is).
type DHCPExplanation struct {
	Name    string            `json:"name"`
	CIDR    string            `json:"cidr"`
	Options map[string]string `json:"options"`
	Change  string            `json:"change"`
}

// Explain picks the owner that query names out of a pass's outcome. query
// is "KIND/NAMESPACE/NAME" (Kind as Kubernetes spells it or its short
// name: pod, vm, vmi; a virt-launcher pod stands for its VM), or the name
// of a port.
func Explain(out Outcome, query string) (Explanation, error) {
	facts := out.Result.Ports()
	var owner state.ObjectRef
	if kind, rest, ok := strings.Cut(query, "/"); ok {
		ns, name, ok := strings.Cut(rest, "/")
		if !ok || ns == "" || name == "" {
			return Explanation{}, fmt.Errorf("%q: want KIND/NAMESPACE/NAME or a port name", query)
		}
		k, err := kindOf(kind)
		if err != nil {
			return Explanation{}, err
		}
		owner = state.ObjectRef{Kind: k, Namespace: ns, Name: name}
		if k == KindPod {
			// A virt-launcher pod's ports are its VM's.
			for _, f := range facts {
				if f.OwnerKind != KindPod && slices.ContainsFunc(f.Pods, func(p desired.Carrier) bool { return p.Namespace == ns && p.Name == name }) {
					owner = state.ObjectRef{Kind: f.OwnerKind, Namespace: f.OwnerNamespace, Name: f.OwnerName}
					break
				}
			}
		}
	} else {
		i := slices.IndexFunc(facts, func(f desired.PortFacts) bool { return f.Port.Name == query })
		if i < 0 {
			if c := findChange(out.Plan, query); c != nil && c.Action == diff.Delete {
				return Explanation{}, fmt.Errorf("port %q: no owner wants it any more; a pass deletes it (owner was %s)", query, c.Owner)
			}
			return Explanation{}, fmt.Errorf("port %q: not a port ovn-sync wants", query)
		}
		owner = state.ObjectRef{Kind: facts[i].OwnerKind, Namespace: facts[i].OwnerNamespace, Name: facts[i].OwnerName}
	}

	e := Explanation{Owner: owner, Ports: []PortExplanation{}, Pending: []desired.Problem{}, Problems: []desired.Problem{}}
	id := owner.Kind + "/" + owner.Namespace + "/" + owner.Name
	for _, f := range facts {
		if f.OwnerKind != owner.Kind || f.OwnerNamespace != owner.Namespace || f.OwnerName != owner.Name {
			continue
		}
		p := PortExplanation{
			Name: f.Port.Name, Switch: f.Port.Switch, Network: f.Port.Network, Provider: f.Provider,
			Addresses: f.Port.Addresses, Sources: f.Addresses, Kept: f.Kept, Chassis: f.Chassis, Change: "none",
		}
		if p.Sources == nil {
			p.Sources = []desired.AddressFact{}
		}
		p.DHCP = dhcpOf(out, f.Port)
		if c := findChange(out.Plan, f.Port.Name); c != nil {
			p.Change = changeText(c)
		}
		e.Ports = append(e.Ports, p)
	}
	for i := range out.Plan.Changes {
		if c := &out.Plan.Changes[i]; c.Kind == diff.KindPort && c.Action == diff.Delete && c.Owner == id &&
			!slices.ContainsFunc(e.Ports, func(p PortExplanation) bool { return p.Name == c.Name }) {
			e.Ports = append(e.Ports, PortExplanation{Name: c.Name, Switch: c.Before.Switch, Network: c.Before.Network,
				Addresses: c.Before.Addresses, Sources: []desired.AddressFact{}, DHCP: []DHCPExplanation{}, Change: "delete"})
		}
	}
	slices.SortFunc(e.Ports, func(a, b PortExplanation) int { return strings.Compare(a.Name, b.Name) })
	concerns := func(p desired.Problem) bool {
		return p.Kind == owner.Kind && p.Namespace == owner.Namespace && p.Name == owner.Name ||
			slices.ContainsFunc(e.Ports, func(x PortExplanation) bool { return strings.Contains(p.Message, `"`+x.Name+`"`) })
	}
	for _, p := range out.Result.Problems {
		if concerns(p) {
			e.Problems = append(e.Problems, p)
		}
	}
	for _, p := range out.Result.Notices {
		if concerns(p) {
			e.Pending = append(e.Pending, p)
		}
	}
	if len(e.Ports) == 0 && len(e.Problems) == 0 {
		return e, fmt.Errorf("%s has no ports and no problems: not an owner of ports (a pod on the host network, finished, or not read)", owner)
	}
	return e, nil
}

func kindOf(s string) (string, error) {
	switch strings.ToLower(s) {
	case "pod", "pods", "po":
		return KindPod, nil
	case "virtualmachine", "virtualmachines", "vm", "vms":
		return KindVirtualMachine, nil
	case "virtualmachineinstance", "virtualmachineinstances", "vmi", "vmis":
		return state.KindVirtualMachineInstance, nil
	}
	return "", fmt.Errorf("kind %q: want Pod, VirtualMachine or VirtualMachineInstance", s)
}

// dhcpOf explains the DHCP_Options rows port p refers to, as wanted.
func dhcpOf(out Outcome, p *state.Port) []DHCPExplanation {
	ds := []DHCPExplanation{}
	for _, name := range []string{p.DHCPv4(), p.DHCPv6()} {
		d := out.Result.Want.DHCP[name]
		if name == "" || d == nil {
			continue
		}
		x := DHCPExplanation{Name: name, CIDR: d.CIDR, Options: d.Options, Change: "none"}
		if x.Options == nil {
			x.Options = map[string]string{}
		}
		for i := range out.Plan.Changes {
			if c := &out.Plan.Changes[i]; c.Kind == diff.KindDHCP && c.Name == name {
				x.Change = c.Action.String()
			}
		}
		ds = append(ds, x)
	}
	return ds
}

func findChange(p diff.Plan, port string) *diff.Change {
	for i := range p.Changes {
		if c := &p.Changes[i]; c.Kind == diff.KindPort && c.Name == port {
			return c
		}
	}
	return nil
}

func changeText(c *diff.Change) string {
	if c.Action == diff.Update {
		return "update: " + c.Fields.String()
	}
	return c.Action.String()
}

// WriteText prints e for people.
func (e Explanation) WriteText(w io.Writer) {
	fmt.Fprintln(w, e.Owner.Kind, e.Owner.Namespace+"/"+e.Owner.Name)
	for _, p := range e.Ports {
		fmt.Fprintf(w, "  port %s\n", p.Name)
		fmt.Fprintf(w, "    switch %s, network %s", p.Switch, p.Network)
		if p.Provider != "" {
			fmt.Fprintf(w, ", provider %s", p.Provider)
		}
		fmt.Fprintln(w)
		fmt.Fprintf(w, "    addresses: %s\n", strings.Join(quoted(p.Addresses), " "))
		if p.Kept {
			fmt.Fprintln(w, "      kept as the NB has it (see the problems)")
		}
		for _, a := range p.Sources {
			fmt.Fprintf(w, "      %-26s %-9s %s\n", a.Address, a.Source, a.Field)
		}
		if p.Chassis != "" {
			fmt.Fprintf(w, "    chassis: %s\n", p.Chassis)
		}
		for _, d := range p.DHCP {
			var opts []string
			for _, k := range slices.Sorted(maps.Keys(d.Options)) {
				opts = append(opts, k+"="+d.Options[k])
			}
			fmt.Fprintf(w, "    dhcp: %s, cidr %s, change %s\n      %s\n", d.Name, d.CIDR, d.Change, strings.Join(opts, " "))
		}
		fmt.Fprintf(w, "    change: %s\n", p.Change)
	}
	for _, p := range e.Pending {
		fmt.Fprintf(w, "  pending %s: %s\n", p.Reason, p.Message)
	}
	for _, p := range e.Problems {
		fmt.Fprintf(w, "  problem %s: %s: %s\n", p.Reason, p.Kind+" "+p.Namespace+"/"+p.Name, p.Message)
	}
}

func quoted(l []string) []string {
	out := make([]string, len(l))
	for i, s := range l {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}
