package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/ovn-sync/ovn-sync/apply"
	"github.com/ovn-sync/ovn-sync/desired"
	"github.com/ovn-sync/ovn-sync/observed"
	"github.com/ovn-sync/ovn-sync/reconcile"
	"github.com/ovn-sync/ovn-sync/sources"
)

// nbFlags select and secure the NB connection.
type nbFlags struct {
	addr            string
	cert, key, ca   string
	maxOps          int
	txnsInFlight    int
	maxDeleteFrac   float64
	allowMassDelete bool
	connectTimeout  time.Duration
}

func (n *nbFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&n.addr, "nb", "", "NB address: unix:PATH, tcp:HOST:PORT, ssl:HOST:PORT (comma-separated for a RAFT cluster), or embedded")
	fs.StringVar(&n.cert, "nb-cert", "", "client certificate `file` for ssl: endpoints")
	fs.StringVar(&n.key, "nb-key", "", "client private key `file` for ssl: endpoints")
	fs.StringVar(&n.ca, "nb-ca", "", "CA certificate `file` that signed the NB server's certificate")
	fs.IntVar(&n.maxOps, "max-ops-per-txn", 1000, "most operations in one NB transaction")
	fs.IntVar(&n.txnsInFlight, "txns-in-flight", apply.DefaultInFlight, "most NB transactions sent and not yet answered")
	fs.Float64Var(&n.maxDeleteFrac, "max-delete-fraction", 0.5, "refuse a pass deleting more than this fraction of our ports (and more than 20)")
	fs.BoolVar(&n.allowMassDelete, "allow-mass-delete", false, "allow a pass past --max-delete-fraction")
	fs.DurationVar(&n.connectTimeout, "connect-timeout", 30*time.Second, "how long to wait for the NB, when connecting and at each attempt to reconnect")
}

// connect dials the NB named by --nb (see observed.Connect).
func (n *nbFlags) connect(ctx context.Context) (*observed.NB, func(), error) {
	return observed.Connect(ctx, observed.Address{NB: n.addr, Cert: n.cert, Key: n.key, CA: n.ca, Timeout: n.connectTimeout})
}

// oneShot holds what plan and apply share.
type oneShot struct {
	fs         *flag.FlagSet
	files      stringList
	net        networkFlags
	nb         nbFlags
	output     string
	exitCode   bool
	allowEmpty bool
}

func newOneShot(name string, stderr io.Writer) *oneShot {
	o := &oneShot{fs: flag.NewFlagSet(name, flag.ContinueOnError)}
	o.fs.SetOutput(stderr)
	o.fs.Var(&o.files, "f", "manifest `file or directory` (repeatable; - reads standard input)")
	o.fs.StringVar(&o.output, "o", "text", "output format: text or json")
	o.fs.BoolVar(&o.exitCode, "detailed-exitcode", false, "exit 0 when there are no changes, 2 when there are (or a kube-ovn port is not adopted), 1 on error")
	o.fs.BoolVar(&o.allowEmpty, "allow-empty", false, "go on when -f holds no Kubernetes objects (every port of ours would be deleted)")
	o.net.register(o.fs)
	o.nb.register(o.fs)
	return o
}

// oneShotRefused are the flags each one-shot command registers but does
// not take.
var oneShotRefused = map[string]refused{
	"plan": writeFlags,
	"apply": {"detailed-exitcode": "apply exits 0 once the plan is applied and 1 on error; " +
		"`plan --detailed-exitcode` says whether changes are pending"},
}

func (o *oneShot) parse(args []string) error {
	if err := parseFlags(o.fs, args, oneShotRefused[o.fs.Name()]); err != nil {
		return err
	}
	if err := o.nb.checkTLS(); err != nil {
		return err
	}
	if o.fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", o.fs.Args())
	}
	if len(o.files) == 0 {
		return errors.New("-f is required: the manifests to reconcile")
	}
	if o.output != "text" && o.output != "json" {
		return fmt.Errorf("-o %q: want text or json", o.output)
	}
	return nil
}

func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// job is what plan, apply and the demo run a pass over.
type job struct {
	in   desired.Inputs
	nb   *observed.NB
	opts reconcile.Options
}

// options turns the NB flags and the default network into a pass's options.
func (n *nbFlags) options(cfg desired.Config) reconcile.Options {
	return reconcile.Options{
		Config:            cfg,
		MaxDeleteFraction: n.maxDeleteFrac,
		AllowMassDelete:   n.allowMassDelete,
		Apply:             apply.Options{MaxOpsPerTxn: n.maxOps, InFlight: n.txnsInFlight},
	}
}

// compute is the pass's plan; nothing is written.
func (j job) compute() reconcile.Outcome { return reconcile.Compute(j.nb, reconcile.All(j.in), j.opts) }

// apply runs the pass.
func (j job) apply(ctx context.Context) (reconcile.Outcome, error) {
	return reconcile.Pass(ctx, j.nb, reconcile.All(j.in), j.opts)
}

func printNotes(w io.Writer, notes []sources.Note) {
	for _, n := range notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
}

// prepare reads the manifests and config and connects to the NB. The
// connection (which loads every row of the NB into the cache) is made
// while the manifests are read; an error in the manifests, or the refusal
// of an empty input, is still the one reported, and the connection is
// then closed.
func (o *oneShot) prepare(ctx context.Context, stderr io.Writer) (job, func(), error) {
	cfg, err := o.net.load(o.fs, os.ReadFile)
	if err != nil {
		return job{}, nil, err
	}
	type connected struct {
		nb   *observed.NB
		stop func()
		err  error
	}
	connectCtx, cancelConnect := context.WithCancel(ctx)
	defer cancelConnect()
	conn := make(chan connected, 1)
	go func() {
		nb, stop, err := o.nb.connect(connectCtx)
		conn <- connected{nb, stop, err}
	}()
	// abandon ends the connection for an error found in the manifests.
	abandon := func(err error) (job, func(), error) {
		cancelConnect()
		if c := <-conn; c.err == nil {
			c.stop()
		}
		return job{}, nil, err
	}
	in, notes, err := sources.ReadManifestsStdin(o.files, stdin)
	if err != nil {
		return abandon(err)
	}
	printNotes(stderr, notes)
	if sources.Count(in) == 0 && !o.allowEmpty {
		return abandon(fmt.Errorf("no Kubernetes objects read from %s: every port of ours would be deleted; "+
			"pass --allow-empty if that is what you want", strings.Join(o.files, ", ")))
	}
	c := <-conn
	if c.err != nil {
		return job{}, nil, c.err
	}
	return job{in: in, nb: c.nb, opts: o.nb.options(cfg)}, c.stop, nil
}

// oneShotCommand parses a plan or apply command line, reads the manifests,
// connects to the NB and hands the job to body.
func oneShotCommand(name string, args []string, stderr io.Writer, body func(context.Context, *oneShot, job) error) error {
	o := newOneShot(name, stderr)
	if err := o.parse(args); err != nil {
		return err
	}
	ctx, cancel := signalContext()
	defer cancel()
	j, stop, err := o.prepare(ctx, stderr)
	if err != nil {
		return err
	}
	defer stop()
	return body(ctx, o, j)
}

func cmdPlan(args []string, stdout, stderr io.Writer) error {
	return oneShotCommand("plan", args, stderr, func(_ context.Context, o *oneShot, j job) error {
		return planOnce(o, j, stdout, stderr)
	})
}

func cmdApply(args []string, stdout, stderr io.Writer) error {
	return oneShotCommand("apply", args, stderr, func(ctx context.Context, o *oneShot, j job) error {
		return applyOnce(ctx, o, j, stdout, stderr)
	})
}

func planOnce(o *oneShot, j job, stdout, stderr io.Writer) error {
	out := j.compute()
	if o.output == "json" {
		out.WriteProblems(stderr)
		if err := out.WriteJSON(stdout); err != nil {
			return err
		}
	} else {
		out.WriteProblems(stdout)
		out.WritePlans(stdout)
	}
	if o.exitCode && out.Pending() {
		return exitError{2}
	}
	return nil
}

func applyOnce(ctx context.Context, o *oneShot, j job, stdout, stderr io.Writer) error {
	if o.nb.addr == "embedded" {
		fmt.Fprintln(stderr, "note: --nb embedded is an in-memory NB that ends with this process: nothing will persist")
	}
	out, err := j.apply(ctx)
	if o.output == "json" {
		out.WriteProblems(stderr)
		if jerr := out.WriteAppliedJSON(stdout); jerr != nil && err == nil {
			err = jerr
		}
	} else {
		out.WriteProblems(stdout)
		out.WriteApplied(stdout)
	}
	return err
}
