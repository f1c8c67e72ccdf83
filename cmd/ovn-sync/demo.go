package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/ovn-sync/ovn-sync/examples"
	"github.com/ovn-sync/ovn-sync/sources"
	"github.com/ovn-sync/ovn-sync/state"
)

// cmdDemo runs the whole pipeline against an embedded NB with the example
// cluster: plan, apply, show the result, and a second pass that has nothing to do.
func cmdDemo(args []string, stdout, stderr io.Writer) error {
	fset := flag.NewFlagSet("demo", flag.ContinueOnError)
	fset.SetOutput(stderr)
	var nf nbFlags
	nf.register(fset)
	var net networkFlags
	net.register(fset)
	if err := fset.Parse(args); err != nil {
		return exitError{1}
	}
	if nf.addr == "" {
		nf.addr = "embedded"
	}
	if net.configFile == "" {
		net.configFile = examples.ConfigFile
	}
	cfg, err := net.load(fset, func(name string) ([]byte, error) { return fs.ReadFile(examples.FS, name) })
	if err != nil {
		return err
	}
	in, notes, err := sources.ReadManifestsFS(examples.FS, []string{examples.ClusterDir})
	if err != nil {
		return err
	}
	printNotes(stderr, notes)

	ctx, cancel := signalContext()
	defer cancel()
	nb, stop, err := nf.connect(ctx)
	if err != nil {
		return err
	}
	defer stop()
	p := job{in: in, nb: nb, opts: nf.options(cfg)}

	fmt.Fprintf(stdout, "ovn-sync demo: %d pods, %d VMs, %d VMIs, %d migrations, %d NADs from examples/cluster; NB %s\n\n",
		len(in.Pods), len(in.VirtualMachines), len(in.VirtualMachineInstances), len(in.Migrations), len(in.NetworkAttachmentDefinitions), nf.addr)

	fmt.Fprintln(stdout, "$ ovn-sync plan")
	out := p.compute()
	printProblems(stdout, out.Result)
	fmt.Fprintln(stdout, out.Plan.String())

	fmt.Fprintln(stdout, "\n$ ovn-sync apply")
	start := time.Now()
	out, err = p.apply(ctx)
	if err != nil {
		return err
	}
	res := out.Applied
	fmt.Fprintf(stdout, "Applied %d operations in %d transactions (%s).\n", res.Ops, len(res.Txns), time.Since(start).Round(time.Millisecond))

	fmt.Fprintln(stdout, "\n$ ovn-nbctl show")
	if err := waitForCache(ctx, p); err != nil {
		return err
	}
	show(stdout, nb.State())

	fmt.Fprintln(stdout, "\n$ ovn-sync apply   # again: the NB already matches")
	out, err = p.apply(ctx)
	if err != nil {
		return err
	}
	res = out.Applied
	fmt.Fprintln(stdout, out.Plan.String())
	fmt.Fprintf(stdout, "Transactions sent: %d.\n", len(res.Txns))
	return nil
}

// waitForCache waits until the cache shows what was applied, i.e. a new
// plan is empty: the cache follows the server's update notifications, which
// may trail a transaction's reply.
func waitForCache(ctx context.Context, p job) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		if p.compute().Plan.Empty() {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("NB cache did not catch up with the applied plan: %w", ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// show prints switches and ports the way `ovn-nbctl show` does, with the
// options ovn-sync manages.
func show(w io.Writer, s state.State) {
	bySwitch := map[string][]*state.Port{}
	for _, p := range s.Ports {
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
		slices.SortFunc(ports, func(a, b *state.Port) int { return strings.Compare(a.Name, b.Name) })
		for _, p := range ports {
			fmt.Fprintf(w, "    port %s\n", p.Name)
			fmt.Fprintf(w, "        addresses: [%s]\n", quoteList(p.Addresses))
			var opts []string
			if p.RequestedChassis != "" {
				opts = append(opts, state.OptRequestedChassis+"="+p.RequestedChassis)
			}
			if p.ActivationStrategy != "" {
				opts = append(opts, state.OptActivationStrategy+"="+p.ActivationStrategy)
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
