package state

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// WriteShow prints switches and ports the way `ovn-nbctl show` does, with
// the options and owner ovn-sync manages.
func (s State) WriteShow(w io.Writer) {
	bySwitch := map[string][]*Port{}
	for _, p := range s.Ports.All() {
		bySwitch[p.Switch] = append(bySwitch[p.Switch], p)
	}
	names := make([]string, 0, len(s.Switches))
	for n := range s.Switches {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		sw := s.Switches[n]
		fmt.Fprintf(w, "switch %s (%s)\n", sw.UUID, sw.Name)
		ports := bySwitch[n]
		slices.SortFunc(ports, func(a, b *Port) int { return strings.Compare(a.Name, b.Name) })
		for _, p := range ports {
			fmt.Fprintf(w, "    port %s\n", p.Name)
			fmt.Fprintf(w, "        addresses: [%s]\n", quoteList(p.Addresses))
			var opts []string
			if p.RequestedChassis != "" {
				opts = append(opts, OptRequestedChassis+"="+p.RequestedChassis)
			}
			if a := p.ActivationStrategy(); a != "" {
				opts = append(opts, OptActivationStrategy+"="+a)
			}
			if len(opts) > 0 {
				fmt.Fprintf(w, "        options: %s\n", strings.Join(opts, " "))
			}
			fmt.Fprintf(w, "        owner: %s\n", p.Owner)
		}
	}
}

func quoteList(l []string) string {
	q := make([]string, len(l))
	for i, s := range l {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}
