package desired

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/ovn-sync/ovn-sync/desired/netconf"
)

// Annotations ovn-sync reads requests from, other than kube-ovn's own
// (AnnIPSuffix and the rest).
const (
	annNetworks = nadv1.NetworkAttachmentAnnot // k8s.v1.cni.cncf.io/networks
	// annDefaultNetwork puts a pod's primary interface on a
	// NetworkAttachmentDefinition instead of the default network (Multus).
	annDefaultNetwork = "v1.multus-cni.io/default-network"
	// multusNamespace is where Multus looks for a default network named
	// without a namespace (its multusNamespace setting's default).
	multusNamespace = "kube-system"
)

// attachment is one network interface an owner asks for.
type attachment struct {
	isDefault bool
	ref       nadRef // when !isDefault
	// iface names the interface; it suffixes the provider of the second and
	// later attachments to one network.
	iface string
	// merged is set once a networks-annotation element was folded in.
	merged bool
	// reqIface is the interface a networks-annotation element names
	// explicitly ("" when none): kube-ovn's per-interface annotations
	// <nad>.<ns>.kubernetes.io/ip_address.<iface> are keyed by it.
	reqIface string
	// podIface is, for a VM's secondary network, the name KubeVirt gives
	// its pod interface in the launcher pod's networks annotation
	// (kubevirtPodIface): named explicitly, as reqIface is.
	podIface string
	ips      []request
	macs     []request
	// claimRef is the IPAMClaim a selection element names
	// ("ipam-claim-reference"), claimSrc where.
	claimRef, claimSrc string
}

// request is an address asked for outside the kube-ovn annotations: in a
// network selection element or a KubeVirt interface.
type request struct {
	src    string // e.g. `k8s.v1.cni.cncf.io/networks[0].ips`
	values []string
}

// primaryAttachment adds a pod's primary interface: the default network,
// unless the v1.multus-cni.io/default-network annotation puts it on a
// NetworkAttachmentDefinition. ok is false when that annotation cannot be
// read.
func (b *builder) primaryAttachment(o *owner, ann map[string]string, atts []attachment, iface string) ([]attachment, bool) {
	v := strings.TrimSpace(ann[annDefaultNetwork])
	if v == "" {
		return append(atts, attachment{isDefault: true, iface: iface}), true
	}
	sels, err := parseSelections(v, multusNamespace)
	switch {
	case err != nil:
		b.ownerProblem(o, "InvalidAnnotation", annDefaultNetwork+" "+err.Error())
		return atts, false
	case len(sels) != 1:
		b.ownerProblem(o, "InvalidAnnotation", fmt.Sprintf("%s %q: names %d networks, want one", annDefaultNetwork, v, len(sels)))
		return atts, false
	}
	at := attachment{ref: sels[0].ref, iface: iface}
	at.addSelection(sels[0], annDefaultNetwork)
	return append(atts, at), true
}

// kubevirtAttachments reads a VMI spec's networks (with their interfaces)
// and the networks annotation into atts. ok is false when some network
// could not be read, so the owner's other ports must be kept.
func (b *builder) kubevirtAttachments(o *owner, spec *kubevirtv1.VirtualMachineInstanceSpec, ann map[string]string, field string, atts []attachment) ([]attachment, bool) {
	var nets []kubevirtv1.Network
	var ifaces []kubevirtv1.Interface
	autoattach := true
	if spec != nil {
		nets, ifaces = spec.Networks, spec.Domain.Devices.Interfaces
		if a := spec.Domain.Devices.AutoattachPodInterface; a != nil {
			autoattach = *a
		}
	}
	ok := true
	if len(nets) == 0 && len(ifaces) == 0 && autoattach {
		// KubeVirt attaches the pod network when nothing is declared.
		atts, ok = b.primaryAttachment(o, ann, atts, "default")
	}
	multusDefault := false
	for i := range nets {
		if m := nets[i].Multus; m != nil && m.Default {
			multusDefault = true
		}
	}
	for i := range nets {
		n := &nets[i]
		if slices.ContainsFunc(nets[:i], func(m kubevirtv1.Network) bool { return m.Name == n.Name }) {
			// KubeVirt rejects this; objects read from files are not checked.
			b.ownerProblem(o, "InvalidNetwork", fmt.Sprintf("%s.networks[%s]: network name used more than once", field, n.Name))
			ok = false
			continue
		}
		var ifc *kubevirtv1.Interface
		for j := range ifaces {
			if ifaces[j].Name == n.Name {
				ifc = &ifaces[j]
				break
			}
		}
		if ifc != nil && ifc.State == kubevirtv1.InterfaceStateAbsent {
			continue // hot-unplugged
		}
		var macs []request
		if ifc != nil && ifc.MacAddress != "" {
			macs = []request{{src: field + ".domain.devices.interfaces[" + n.Name + "].macAddress", values: []string{ifc.MacAddress}}}
		}
		if n.Multus != nil {
			ref, err := parseNetworkName(n.Multus.NetworkName, o.ns)
			if err != nil {
				b.ownerProblem(o, "InvalidNetwork",
					fmt.Sprintf("%s.networks[%s].multus.networkName %q: %v", field, n.Name, n.Multus.NetworkName, err))
				ok = false
				continue
			}
			at := attachment{ref: ref, iface: n.Name, macs: macs}
			if !n.Multus.Default {
				at.podIface = b.podIface(n.Name) // the primary interface is eth0
			}
			atts = append(atts, at)
			continue
		}
		// pod: {} or no source at all, which KubeVirt defaults to the pod
		// network; a multus network marked default replaces it, as does the
		// v1.multus-cni.io/default-network annotation.
		if multusDefault {
			continue
		}
		var primOK bool
		atts, primOK = b.primaryAttachment(o, ann, atts, n.Name)
		ok = ok && primOK
		if primOK {
			atts[len(atts)-1].macs = append(atts[len(atts)-1].macs, macs...)
		}
	}
	atts, annOK := b.annotationAttachments(o, ann, atts)
	return atts, ok && annOK
}

// addSelection adds a network selection element's requests to at; src
// names the annotation it came from.
func (at *attachment) addSelection(sel selection, src string) {
	at.merged = true
	if len(sel.ips) > 0 {
		at.ips = append(at.ips, request{src: src + ".ips", values: sel.ips})
	}
	if sel.mac != "" {
		at.macs = append(at.macs, request{src: src + ".mac", values: []string{sel.mac}})
	}
	if sel.claim != "" {
		at.claimRef, at.claimSrc = sel.claim, src+".ipam-claim-reference"
	}
}

// annotationAttachments adds the elements of the networks annotation to
// atts. An element naming a NAD already attached from a KubeVirt network,
// with no interface or that network's name, adds its requests to that
// attachment instead of a second one. ok is false when the annotation cannot
// be read.
func (b *builder) annotationAttachments(o *owner, ann map[string]string, atts []attachment) ([]attachment, bool) {
	v := ann[annNetworks]
	if strings.TrimSpace(v) == "" {
		return atts, true
	}
	sels, err := parseSelections(v, o.ns)
	if err != nil {
		b.ownerProblem(o, "InvalidAnnotation", annNetworks+" "+err.Error())
		return atts, false
	}
	n := len(atts)
	for i, sel := range sels {
		var at *attachment
		for j := 0; j < n; j++ {
			c := &atts[j]
			if !c.isDefault && !c.merged && c.ref == sel.ref && (sel.iface == "" || sel.iface == c.iface) {
				at = c
				break
			}
		}
		if at == nil {
			iface := sel.iface
			if iface == "" {
				iface = "net" + strconv.Itoa(i+1) // Multus' own default name
			}
			atts = append(atts, attachment{ref: sel.ref, iface: iface})
			at = &atts[len(atts)-1]
		}
		at.addSelection(sel, annNetworks+"["+strconv.Itoa(i)+"]")
		if sel.iface != "" {
			at.reqIface = sel.iface
		}
	}
	return atts, true
}

// ifaceSuffix returns the interface name that suffixes the provider of
// atts[i], "" for none, as kube-ovn names the ports of a network attached
// more than once: every attachment to it whose interface is named (a
// networks-annotation element's "interface" or "@iface", or the pod
// interface KubeVirt names after a VM's network) is suffixed with that
// name; of the others, every one but the first with the name Multus gives
// it (net<i>). legacy is the suffix ovn-sync gave before: none for the
// first attachment, the interface for the others.
func ifaceSuffix(atts []attachment, i int) (suffix, legacy string) {
	at := &atts[i]
	same := func(x attachment) bool { return x.isDefault == at.isDefault && x.ref == at.ref }
	first := slices.IndexFunc(atts, same) == i
	if !first {
		legacy = at.iface
	}
	if first && slices.IndexFunc(atts[i+1:], same) < 0 {
		return "", "" // attached once
	}
	switch {
	case at.reqIface != "":
		return at.reqIface, legacy
	case at.podIface != "":
		return at.podIface, legacy
	}
	return legacy, legacy
}

func withSuffix(provider, suffix string) string {
	if suffix == "" {
		return provider
	}
	return provider + "." + suffix
}

// kubevirtPodIface is the name KubeVirt gives the pod interface of a VM's
// secondary (Multus) network, which it writes as the "interface" of the
// network's element in the launcher pod's networks annotation: "pod" and
// the first 11 hex digits of the SHA-256 of the network's name (KubeVirt's
// hashed network name scheme, pkg/network/namescheme).
func kubevirtPodIface(network string) string {
	sum := sha256.Sum256([]byte(network))
	return "pod" + hex.EncodeToString(sum[:])[:11]
}

// podIface is kubevirtPodIface(network), hashed once a Build: a
// cluster's VMs name few networks.
func (b *builder) podIface(network string) string {
	iface, ok := b.podIfaces[network]
	if !ok {
		if b.podIfaces == nil {
			b.podIfaces = map[string]string{}
		}
		iface = kubevirtPodIface(network)
		b.podIfaces[network] = iface
	}
	return iface
}

// selection is one element of a networks annotation.
type selection struct {
	ref   nadRef
	iface string
	ips   []string
	mac   string
	claim string // ipam-claim-reference
}

// parseSelections reads a k8s.v1.cni.cncf.io/networks value: either a JSON
// list of selection elements or Multus' short form "[ns/]name[@iface],...".
// Names without a namespace are in defNS. Errors quote the bad part.
func parseSelections(v, defNS string) ([]selection, error) {
	v = strings.TrimSpace(v)
	// Multus reads the value as JSON when it holds any of these (a list of
	// selection elements: a lone object is an error), else as a comma list.
	if strings.ContainsAny(v, "[{\"") {
		var els []nadv1.NetworkSelectionElement
		if strings.HasPrefix(v, "{") {
			return nil, fmt.Errorf("invalid JSON: a single object; Multus reads a list of network selection elements, [{...}]")
		}
		if err := json.Unmarshal([]byte(v), &els); err != nil {
			return nil, fmt.Errorf("invalid JSON: %v", err)
		}
		out := make([]selection, 0, len(els))
		for i, el := range els {
			ns := el.Namespace
			if ns == "" {
				ns = defNS
			}
			if !netconf.IsDNSLabel(ns) || !netconf.IsDNSSubdomain(el.Name) {
				return nil, fmt.Errorf("[%d]: %q is not a valid network name", i, el.Namespace+"/"+el.Name)
			}
			out = append(out, selection{ref: nadRef{ns, el.Name}, iface: el.InterfaceRequest, ips: el.IPRequest, mac: el.MacRequest,
				claim: strings.TrimSpace(el.IPAMClaimReference)})
		}
		return out, nil
	}
	var out []selection
	for _, item := range strings.Split(v, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		// Multus trims the namespace, the name and the interface.
		rest, iface, hasIface := strings.Cut(item, "@")
		iface = strings.TrimSpace(iface)
		switch {
		case hasIface && iface == "":
			return nil, fmt.Errorf("%q: empty interface name", item)
		case strings.Contains(iface, "@"):
			return nil, fmt.Errorf("%q: more than one \"@\"", item)
		}
		ref, err := parseNetworkName(rest, defNS)
		if err != nil {
			return nil, fmt.Errorf("%q: %v", item, err)
		}
		out = append(out, selection{ref: ref, iface: iface})
	}
	return out, nil
}

// parseNetworkName reads "name" or "namespace/name".
func parseNetworkName(s, defNS string) (nadRef, error) {
	ns, name, hasNS := strings.Cut(strings.TrimSpace(s), "/")
	ns, name = strings.TrimSpace(ns), strings.TrimSpace(name)
	if !hasNS {
		ns, name = defNS, ns
	}
	if !netconf.IsDNSLabel(ns) || !netconf.IsDNSSubdomain(name) {
		return nadRef{}, fmt.Errorf("not a valid [<namespace>/]<name>")
	}
	return nadRef{ns, name}, nil
}
