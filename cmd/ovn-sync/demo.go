package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"time"

	"github.com/ovn-sync/ovn-sync/examples"
	"github.com/ovn-sync/ovn-sync/sources"
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
	if err := parseFlags(fset, args, nil); err != nil {
		return err
	}
	if err := nf.checkTLS(); err != nil {
		return err
	}
	if fset.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fset.Args())
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
		in.PodCount(), in.VMCount(), in.VMICount(), len(in.Migrations), len(in.NetworkAttachmentDefinitions), nf.addr)

	fmt.Fprintln(stdout, "$ ovn-sync plan")
	out := p.compute()
	out.WriteProblems(stdout)
	out.WritePlans(stdout)

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
	nb.State().WriteShow(stdout)

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
