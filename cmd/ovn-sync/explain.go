package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/ovn-sync/ovn-sync/desired"
	"github.com/ovn-sync/ovn-sync/reconcile"
	"github.com/ovn-sync/ovn-sync/sources"
)

// cmdExplain prints, for one owner (or the owner of a port), its ports and
// where each address came from. It reads what a pass reads — manifests
// with -f, or the cluster with --kubeconfig, and the NB — and writes
// nothing.
func cmdExplain(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("explain", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var files stringList
	var net networkFlags
	var nf nbFlags
	var kubeconfig, output string
	fs.Var(&files, "f", "manifest `file or directory` (repeatable; - reads standard input)")
	fs.StringVar(&kubeconfig, "kubeconfig", "", "read the objects from this cluster instead of -f")
	fs.StringVar(&output, "o", "text", "output format: text or json")
	net.register(fs)
	nf.register(fs)
	// The owner may come before the flags, as docs/cli.md shows it: parse on
	// past each argument that is not a flag.
	var pos []string
	for rest := args; ; {
		if err := parseFlags(fs, rest, writeFlags); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		pos, rest = append(pos, fs.Arg(0)), fs.Args()[1:]
	}
	if err := nf.checkTLS(); err != nil {
		return err
	}
	switch {
	case len(pos) != 1:
		return errors.New("want one KIND/NAMESPACE/NAME or port name, e.g. vm/tenant/db")
	case (len(files) == 0) == (kubeconfig == ""):
		return errors.New("give either -f (manifests) or --kubeconfig (a cluster)")
	case output != "text" && output != "json":
		return fmt.Errorf("-o %q: want text or json", output)
	}
	cfg, err := net.load(fs, os.ReadFile)
	if err != nil {
		return err
	}
	ctx, cancel := signalContext()
	defer cancel()
	var in desired.Inputs
	if kubeconfig != "" {
		in, err = readCluster(ctx, kubeconfig)
	} else {
		var notes []sources.Note
		in, notes, err = sources.ReadManifestsStdin(files, stdin)
		printNotes(stderr, notes)
	}
	if err != nil {
		return err
	}
	nb, stop, err := nf.connect(ctx)
	if err != nil {
		return err
	}
	defer stop()
	e, err := reconcile.Explain(reconcile.Compute(nb, reconcile.All(in), nf.options(cfg)), pos[0])
	if err != nil {
		return err
	}
	if output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(e)
	}
	e.WriteText(stdout)
	return nil
}

// readCluster lists every object a pass reads from the cluster kubeconfig
// names, through the same informers as run mode.
func readCluster(ctx context.Context, kubeconfig string) (desired.Inputs, error) {
	klog.SetLogger(logr.Discard())
	rc, err := restConfig(kubeconfig)
	if err != nil {
		return desired.Inputs{}, err
	}
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return desired.Inputs{}, err
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return desired.Inputs{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return sources.ReadCluster(ctx, kube, dyn)
}
