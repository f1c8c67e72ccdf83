package desired

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/yaml"

	ipamclaimsv1alpha1 "github.com/ovn-sync/ovn-sync/apis/ipamclaims/v1alpha1"
	kubeovnv1 "github.com/ovn-sync/ovn-sync/apis/kubeovn/v1"
	"github.com/ovn-sync/ovn-sync/internal/statetext"
	"github.com/ovn-sync/ovn-sync/state"
)

// TestBuild runs the scripts under testdata/build. Commands:
//
//	config            YAML like the --config file (defaultNetwork: ...); prints ok or the error
//	objects [add]     Kubernetes YAML, multi-document; replaces the inputs (add: appends)
//	delete            lines "Kind namespace/name"; removes those inputs
//	have              a state in statetext's format, as build prints it;
//	                  replaces the NB state
//	have last         the NB after applying the last build: its want plus
//	                  every row of have that is not ours
//	build [sources]   prints the want-state, the problems and notices, and
//	                  (sources) where each built port's addresses came from
//
// Every build is also checked, failing the test rather than the golden
// output: that reordering the inputs changes nothing, and that no two ports
// on a switch share an address unless have already had them so. When a
// second pass over the applied result would change something, build says so
// in its output.
func TestBuild(t *testing.T) {
	datadriven.Walk(t, "testdata/build", func(t *testing.T, path string) {
		h := &harness{}
		h.cfg, _ = NewConfig("ovn-default", []string{"10.16.0.0/16"}, []string{"10.16.0.1"})
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			return h.run(t, d)
		})
	})
}

// fileConfig is the defaultNetwork part of ovn-sync's config file.
type fileConfig struct {
	DefaultNetwork struct {
		LogicalSwitch string   `json:"logicalSwitch"`
		Subnets       []string `json:"subnets"`
		ExcludeIPs    []string `json:"excludeIPs"`
		Gateway       string   `json:"gateway"`
		DHCP          bool     `json:"dhcp"`
		DHCPv4Options string   `json:"dhcpV4Options"`
		DHCPv6Options string   `json:"dhcpV6Options"`
	} `json:"defaultNetwork"`
	// Adopt is --adopt: the vendor whose ports are adopted.
	Adopt string `json:"adopt"`
}

func (fc fileConfig) config() (Config, error) {
	cfg, err := NewConfig(fc.DefaultNetwork.LogicalSwitch, fc.DefaultNetwork.Subnets, fc.DefaultNetwork.ExcludeIPs)
	cfg.Adopt = fc.Adopt
	if err == nil && fc.DefaultNetwork.DHCP {
		cfg, err = cfg.WithDHCP(fc.DefaultNetwork.DHCPv4Options, fc.DefaultNetwork.DHCPv6Options)
	}
	if err != nil || fc.DefaultNetwork.Gateway == "" {
		return cfg, err
	}
	return cfg.WithGateway(strings.Split(fc.DefaultNetwork.Gateway, ","))
}

type harness struct {
	cfg  Config
	in   Inputs
	have state.State
	last *state.State
}

func (h *harness) run(t *testing.T, d *datadriven.TestData) string {
	switch d.Cmd {
	case "config":
		var fc fileConfig
		if err := yaml.UnmarshalStrict([]byte(d.Input), &fc); err != nil {
			d.Fatalf(t, "config: %v", err)
		}
		cfg, err := fc.config()
		if err != nil {
			return "error: " + err.Error() + "\n"
		}
		h.cfg = cfg
		return "ok\n"
	case "objects":
		if !d.HasArg("add") {
			h.in = Inputs{}
		}
		if err := decodeObjects(d.Input, &h.in); err != nil {
			d.Fatalf(t, "objects: %v", err)
		}
		return "ok\n"
	case "delete":
		for _, line := range nonEmptyLines(d.Input) {
			kind, key, _ := strings.Cut(line, " ")
			ns, name, _ := strings.Cut(key, "/")
			if !deleteObject(&h.in, kind, ns, name) {
				d.Fatalf(t, "delete: no %s", line)
			}
		}
		return "ok\n"
	case "have":
		if d.HasArg("last") {
			if h.last == nil {
				d.Fatalf(t, "have last: no build yet")
			}
			h.have = applied(h.have, *h.last)
			return "ok\n"
		}
		s, err := statetext.Parse(d.Input)
		if err != nil {
			d.Fatalf(t, "have: %v", err)
		}
		h.have = s
		return "ok\n"
	case "build":
		r := Build(h.in, h.cfg, h.have)
		want, problems := r.Want, r.Problems
		h.check(t, d, r)
		h.last = &want
		var out strings.Builder
		out.WriteString(statetext.Print(withoutUUIDs(want)))
		for _, p := range problems {
			fmt.Fprintf(&out, "problem %s %s/%s %s: %s\n", p.Kind, p.Namespace, p.Name, p.Reason, p.Message)
		}
		for _, p := range r.Notices {
			fmt.Fprintf(&out, "notice %s %s/%s %s: %s\n", p.Kind, p.Namespace, p.Name, p.Reason, p.Message)
		}
		if d.HasArg("sources") {
			out.WriteString(renderSources(r))
		}
		if d.HasArg("claims") {
			out.WriteString(renderClaims(r))
		}
		again, _ := wantProblems(Build(h.in, h.cfg, applied(h.have, want)))
		if dd := diffStates(want, again); dd != "" {
			if r.Again {
				out.WriteString("again: the next pass changes:\n" + dd)
			} else {
				out.WriteString("a second pass changes:\n" + dd)
			}
		} else if r.Again {
			t.Errorf("%s: Build says Again, but a second pass changes nothing", d.Pos)
		}
		return out.String()
	}
	d.Fatalf(t, "unknown command %q", d.Cmd)
	return ""
}

// check asserts what must hold for every build.
func (h *harness) check(t *testing.T, d *datadriven.TestData, r Result) {
	want, problems := r.Want, r.Problems
	t.Helper()
	rev := reversed(h.in)
	want2, problems2 := wantProblems(Build(rev, h.cfg, h.have))
	if dd := diffStates(want, want2); dd != "" {
		t.Errorf("%s: Build over reversed inputs differs:\n%s", d.Pos, dd)
	}
	if !slices.Equal(problems, problems2) {
		t.Errorf("%s: Build over reversed inputs gives problems\n%v\nwant\n%v", d.Pos, problems2, problems)
	}
	want3, problems3 := wantProblems(Build(readOnly(h.in), h.cfg, h.have))
	if dd := diffStates(want, want3); dd != "" || !slices.Equal(problems, problems3) {
		t.Errorf("%s: Build over pods reduced to what it reads (PodAnnotationRead, PodLabelRead, PodOwnerRead) differs:\n%s%v\nwant\n%v", d.Pos, dd, problems3, problems)
	}
	for _, err := range invariants(h.have, r) {
		t.Errorf("%s: %v", d.Pos, err)
	}
}

// readOnly returns in with each pod reduced to the annotations, labels and
// owner references Build reads, as the informers store pods, and Multus'
// network-status added, which Build must not read.
func readOnly(in Inputs) Inputs {
	out := in
	out.Pods = make([]*corev1.Pod, len(in.Pods))
	for i, p := range in.Pods {
		c := p.DeepCopy()
		c.Annotations = map[string]string{"k8s.v1.cni.cncf.io/network-status": `[{"name":"kube-ovn","interface":"eth0","default":true}]`}
		for k, v := range p.Annotations {
			if PodAnnotationRead(k) {
				c.Annotations[k] = v
			}
		}
		c.Labels = nil
		for k, v := range p.Labels {
			if PodLabelRead(k) {
				if c.Labels == nil {
					c.Labels = map[string]string{}
				}
				c.Labels[k] = v
			}
		}
		c.OwnerReferences = slices.DeleteFunc(c.OwnerReferences, func(r metav1.OwnerReference) bool { return !PodOwnerRead(r) })
		out.Pods[i] = c
	}
	return out
}

// invariants returns what is wrong with a Build's result: ports whose
// switch is not in want, addresses and port_security that differ, and
// addresses shared on one switch (or with a port that is not ours), unless
// have already had both ports so and one of them is kept as it is (its
// network or request unreadable: Build cannot move it).
func invariants(have state.State, r Result) []error {
	want := r.Want
	kept := map[string]bool{}
	for _, f := range r.Ports() {
		kept[f.Port.Name] = f.Kept
	}
	var errs []error
	if !want.Index.Equal(state.IndexPorts(want.Ports)) {
		errs = append(errs, fmt.Errorf("want.Index (%d entries) is not IndexPorts(want.Ports) (%d ports)", want.Index.Len(), want.Ports.Len()))
	}
	type key struct {
		sw, a string
	}
	holders := map[key]string{}
	unchanged := func(name string) bool {
		hp, wp := have.Ports.Get(name), want.Ports.Get(name)
		return hp != nil && wp != nil && hp.Equal(wp)
	}
	stuck := func(a, b string) bool { return unchanged(a) && unchanged(b) && (kept[a] || kept[b]) }
	for _, name := range slices.Sorted(want.Ports.Names()) {
		p := want.Ports.Get(name)
		if p.Name != name {
			errs = append(errs, fmt.Errorf("port %q is keyed %q", p.Name, name))
		}
		if _, ok := want.Switches[p.Switch]; !ok {
			errs = append(errs, fmt.Errorf("port %q: switch %q is not in want", name, p.Switch))
		}
		if !slices.Equal(p.Addresses, p.PortSecurity) {
			errs = append(errs, fmt.Errorf("port %q: addresses %q but port_security %q", name, p.Addresses, p.PortSecurity))
		}
		for _, ref := range []string{p.DHCPv4(), p.DHCPv6()} {
			hp := have.Ports.Get(name)
			foreign := hp != nil && (hp.DHCPv4() == ref || hp.DHCPv6() == ref) && have.DHCP[ref] == nil
			if ref != "" && want.DHCP[ref] == nil && !foreign {
				errs = append(errs, fmt.Errorf("port %q refers to DHCP_Options %q, which is neither in want nor a row not ours it held", name, ref))
			}
		}
		// A port that is have's row itself (write) carries its UUID.
		if p.UUID != "" && p != have.Ports.Get(name) || p.DynamicAddresses() != "" || p.Vendor() != "" || p.VendorSwitch() != "" {
			errs = append(errs, fmt.Errorf("port %q carries observed-only fields", name))
		}
		for _, e := range p.Addresses {
			for _, w := range strings.Fields(e) {
				k := key{p.Switch, w}
				if other, ok := holders[k]; ok && !stuck(name, other) {
					errs = append(errs, fmt.Errorf("ports %q and %q both hold %s on %s", other, name, w, p.Switch))
				}
				holders[k] = name
			}
		}
	}
	for _, name := range slices.Sorted(have.Ports.Names()) {
		hp := have.Ports.Get(name)
		if hp.Owned() || want.Ports.Get(name) != nil && want.Ports.Get(name).Adopt() == hp.Vendor() {
			continue // ours, or adopted: its addresses are its own
		}
		for _, e := range append(slices.Clone(hp.Addresses), hp.DynamicAddresses()) {
			for _, w := range strings.Fields(e) {
				if _, err := netip.ParseAddr(w); err != nil {
					continue
				}
				for _, sw := range sortedKeys(want.Switches) {
					if other, ok := holders[key{sw, w}]; ok && !(unchanged(other) && kept[other]) && !keptAgainst(have, r, other, name, w) {
						errs = append(errs, fmt.Errorf("port %q was given %s, held by %q which is not ours", other, w, name))
					}
				}
			}
		}
	}
	return errs
}

// keptAgainst reports whether our port ours keeps w beside the port that
// is not ours called foreign, as the rules of docs/addresses.md allow: it held w already
// in have (it is not given w), and an AddressConflict Problem names both.
func keptAgainst(have state.State, r Result, ours, foreign, w string) bool {
	hp := have.Ports.Get(ours)
	if hp == nil || !slices.ContainsFunc(hp.Addresses, func(e string) bool { return slices.Contains(strings.Fields(e), w) }) {
		return false
	}
	return slices.ContainsFunc(r.Problems, func(p Problem) bool {
		return p.Reason == "AddressConflict" && strings.Contains(p.Message, strconv.Quote(ours)) && strings.Contains(p.Message, strconv.Quote(foreign))
	})
}

// applied is the NB after the plan from have to want is applied: want, plus
// the rows of have that are not ours, which are never deleted. Our rows
// missing from want are gone. An adopted row keeps its vendor's keys.
func applied(have, want state.State) state.State {
	s := state.New(want.Ports.Len())
	for k, v := range want.Switches {
		s.Switches[k] = v
	}
	for k, v := range want.DHCP {
		s.DHCP[k] = v
	}
	for k, v := range want.Ports.All() {
		if hp := have.Ports.Get(k); hp != nil && (v.Adopt() != "" || hp.Vendor() != "") {
			p := *v
			p.EditRare(func(r *state.Rare) { r.Adopt, r.Vendor, r.VendorSwitch = "", hp.Vendor(), hp.VendorSwitch() })
			v = &p
		}
		s.Ports.Set(k, v)
	}
	for k, v := range have.Switches {
		if _, ok := s.Switches[k]; !ok && !v.Owned() {
			s.Switches[k] = v
		}
	}
	for k, v := range have.Ports.All() {
		if _, ok := s.Ports.Lookup(k); !ok && !v.Owned() {
			s.Ports.Set(k, v)
		}
	}
	return s
}

// diffStates lists the rows of a and b that differ, in statetext's format;
// a desired port's Adopt, which only says how its row came to be, is not
// compared.
func diffStates(a, b state.State) string {
	al := strings.Split(statetext.Print(withoutUUIDs(withoutAdopt(a))), "\n")
	bl := strings.Split(statetext.Print(withoutUUIDs(withoutAdopt(b))), "\n")
	var out strings.Builder
	for _, l := range al {
		if l != "" && !slices.Contains(bl, l) {
			out.WriteString("- " + l + "\n")
		}
	}
	for _, l := range bl {
		if l != "" && !slices.Contains(al, l) {
			out.WriteString("+ " + l + "\n")
		}
	}
	return out.String()
}

func reversed(in Inputs) Inputs {
	r := Inputs{
		Pods:                         slices.Clone(in.Pods),
		VirtualMachines:              slices.Clone(in.VirtualMachines),
		VirtualMachineInstances:      slices.Clone(in.VirtualMachineInstances),
		Migrations:                   slices.Clone(in.Migrations),
		NetworkAttachmentDefinitions: slices.Clone(in.NetworkAttachmentDefinitions),
		Subnets:                      slices.Clone(in.Subnets),
		Namespaces:                   slices.Clone(in.Namespaces),
		StatefulSets:                 slices.Clone(in.StatefulSets),
		IPs:                          slices.Clone(in.IPs),
		IPAMClaims:                   slices.Clone(in.IPAMClaims),
	}
	slices.Reverse(r.IPs)
	slices.Reverse(r.IPAMClaims)
	slices.Reverse(r.Pods)
	slices.Reverse(r.VirtualMachines)
	slices.Reverse(r.VirtualMachineInstances)
	slices.Reverse(r.Migrations)
	slices.Reverse(r.NetworkAttachmentDefinitions)
	slices.Reverse(r.Subnets)
	slices.Reverse(r.Namespaces)
	slices.Reverse(r.StatefulSets)
	return r
}

// renderClaims prints what publishing would write to each claim a port
// reads: the port's addresses, or why it has none.
func renderClaims(r Result) string {
	var lines []string
	for _, f := range r.Claims() {
		l := fmt.Sprintf("claim %s/%s owner=%s port=%s", f.Claim.Namespace, f.Claim.Name, f.Owner, f.Port)
		if f.Reason == "" {
			l += " ips=" + strings.Join(f.IPs, ",")
		} else {
			l += " reason=" + f.Reason + ": " + f.Message
		}
		lines = append(lines, l+"\n")
	}
	sort.Strings(lines)
	return strings.Join(lines, "")
}

// renderSources prints, for each port Build built, where each address
// came from, sorted by port name.
func renderSources(r Result) string {
	var lines []string
	for _, f := range r.Ports() {
		if f.Kept {
			lines = append(lines, "source "+f.Port.Name+" kept as it is")
			continue
		}
		l := "source " + f.Port.Name
		for _, a := range f.Addresses {
			l += " " + a.Address + "=" + a.Source.String()
			if a.Field != "" {
				l += "(" + a.Field + ")"
			}
		}
		lines = append(lines, l)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n") + "\n"
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func nonEmptyLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

// decodeObjects reads multi-document YAML strictly into typed objects.
func decodeObjects(text string, in *Inputs) error {
	for i, doc := range splitDocs(text) {
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			return fmt.Errorf("document %d: %v", i, err)
		}
		var err error
		switch tm.Kind {
		case "Pod":
			o := &corev1.Pod{}
			err = yaml.UnmarshalStrict([]byte(doc), o)
			in.Pods = append(in.Pods, o)
		case "VirtualMachine":
			o := &kubevirtv1.VirtualMachine{}
			err = yaml.UnmarshalStrict([]byte(doc), o)
			in.VirtualMachines = append(in.VirtualMachines, o)
		case "VirtualMachineInstance":
			o := &kubevirtv1.VirtualMachineInstance{}
			err = yaml.UnmarshalStrict([]byte(doc), o)
			in.VirtualMachineInstances = append(in.VirtualMachineInstances, o)
		case "VirtualMachineInstanceMigration":
			o := &kubevirtv1.VirtualMachineInstanceMigration{}
			err = yaml.UnmarshalStrict([]byte(doc), o)
			in.Migrations = append(in.Migrations, o)
		case "NetworkAttachmentDefinition":
			o := &nadv1.NetworkAttachmentDefinition{}
			err = yaml.UnmarshalStrict([]byte(doc), o)
			in.NetworkAttachmentDefinitions = append(in.NetworkAttachmentDefinitions, o)
		case "Subnet":
			o := &kubeovnv1.Subnet{}
			// kube-ovn's Subnets carry fields ovn-sync does not read.
			err = yaml.Unmarshal([]byte(doc), o)
			in.Subnets = append(in.Subnets, o)
		case "Namespace":
			o := &corev1.Namespace{}
			err = yaml.UnmarshalStrict([]byte(doc), o)
			in.Namespaces = append(in.Namespaces, o)
		case "StatefulSet":
			o := &appsv1.StatefulSet{}
			err = yaml.UnmarshalStrict([]byte(doc), o)
			in.StatefulSets = append(in.StatefulSets, o)
		case "IP":
			o := &kubeovnv1.IP{}
			err = yaml.UnmarshalStrict([]byte(doc), o)
			in.IPs = append(in.IPs, o)
		case "IPAMClaim":
			o := &ipamclaimsv1alpha1.IPAMClaim{}
			err = yaml.UnmarshalStrict([]byte(doc), o)
			in.IPAMClaims = append(in.IPAMClaims, o)
		default:
			return fmt.Errorf("document %d: unexpected kind %q", i, tm.Kind)
		}
		if err != nil {
			return fmt.Errorf("document %d (%s): %v", i, tm.Kind, err)
		}
	}
	return nil
}

func splitDocs(text string) []string {
	var docs []string
	var cur strings.Builder
	flush := func() {
		if strings.TrimSpace(cur.String()) != "" {
			docs = append(docs, cur.String())
		}
		cur.Reset()
	}
	for _, l := range strings.Split(text, "\n") {
		if strings.TrimRight(l, " ") == "---" {
			flush()
			continue
		}
		cur.WriteString(l + "\n")
	}
	flush()
	return docs
}

func deleteObject(in *Inputs, kind, ns, name string) bool {
	match := func(m metav1.Object) bool { return m.GetNamespace() == ns && m.GetName() == name }
	n := 0
	switch kind {
	case "Pod":
		n = len(in.Pods)
		in.Pods = slices.DeleteFunc(in.Pods, func(o *corev1.Pod) bool { return match(o) })
		n -= len(in.Pods)
	case "VirtualMachine":
		n = len(in.VirtualMachines)
		in.VirtualMachines = slices.DeleteFunc(in.VirtualMachines, func(o *kubevirtv1.VirtualMachine) bool { return match(o) })
		n -= len(in.VirtualMachines)
	case "VirtualMachineInstance":
		n = len(in.VirtualMachineInstances)
		in.VirtualMachineInstances = slices.DeleteFunc(in.VirtualMachineInstances, func(o *kubevirtv1.VirtualMachineInstance) bool { return match(o) })
		n -= len(in.VirtualMachineInstances)
	case "VirtualMachineInstanceMigration":
		n = len(in.Migrations)
		in.Migrations = slices.DeleteFunc(in.Migrations, func(o *kubevirtv1.VirtualMachineInstanceMigration) bool { return match(o) })
		n -= len(in.Migrations)
	case "NetworkAttachmentDefinition":
		n = len(in.NetworkAttachmentDefinitions)
		in.NetworkAttachmentDefinitions = slices.DeleteFunc(in.NetworkAttachmentDefinitions, func(o *nadv1.NetworkAttachmentDefinition) bool { return match(o) })
		n -= len(in.NetworkAttachmentDefinitions)
	case "Subnet":
		n = len(in.Subnets)
		in.Subnets = slices.DeleteFunc(in.Subnets, func(o *kubeovnv1.Subnet) bool { return match(o) })
		n -= len(in.Subnets)
	case "Namespace":
		n = len(in.Namespaces)
		in.Namespaces = slices.DeleteFunc(in.Namespaces, func(o *corev1.Namespace) bool { return match(o) })
		n -= len(in.Namespaces)
	case "IPAMClaim":
		n = len(in.IPAMClaims)
		in.IPAMClaims = slices.DeleteFunc(in.IPAMClaims, func(o *ipamclaimsv1alpha1.IPAMClaim) bool { return match(o) })
		n -= len(in.IPAMClaims)
	case "StatefulSet":
		n = len(in.StatefulSets)
		in.StatefulSets = slices.DeleteFunc(in.StatefulSets, func(o *appsv1.StatefulSet) bool { return match(o) })
		n -= len(in.StatefulSets)
	}
	return n > 0
}

// withoutUUIDs is want as a result means it: a port that is the NB's row
// itself (write) carries the row's UUID, which no output shows.
func withoutUUIDs(s state.State) state.State {
	return withoutField(s, func(p *state.Port) *string { return &p.UUID })
}

func withoutAdopt(s state.State) state.State {
	c := s.Clone()
	for k, p := range c.Ports.All() {
		if p.Adopt() != "" {
			q := *p
			q.EditRare(func(r *state.Rare) { r.Adopt = "" })
			c.Ports.Set(k, &q)
		}
	}
	return c
}

// withoutField is s with the field f names emptied on every port, each
// port that had it copied.
func withoutField(s state.State, f func(*state.Port) *string) state.State {
	c := s.Clone()
	for k, p := range c.Ports.All() {
		if *f(p) != "" {
			q := *p
			*f(&q) = ""
			c.Ports.Set(k, &q)
		}
	}
	return c
}
