package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/ovn-sync/ovn-sync/apply"
	"github.com/ovn-sync/ovn-sync/desired"
	"github.com/ovn-sync/ovn-sync/diff"
	"github.com/ovn-sync/ovn-sync/observed"
	"github.com/ovn-sync/ovn-sync/sources"
	"github.com/ovn-sync/ovn-sync/state"
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
	fs.DurationVar(&n.connectTimeout, "connect-timeout", 30*time.Second, "how long to wait for the NB")
}

func (n *nbFlags) tlsConfig() (*tls.Config, error) {
	if n.cert == "" && n.key == "" && n.ca == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if n.cert != "" || n.key != "" {
		pair, err := tls.LoadX509KeyPair(n.cert, n.key)
		if err != nil {
			return nil, fmt.Errorf("--nb-cert/--nb-key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	if n.ca != "" {
		pem, err := os.ReadFile(n.ca)
		if err != nil {
			return nil, fmt.Errorf("--nb-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--nb-ca %s: no certificate found", n.ca)
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}

// connect dials the NB named by --nb. For "embedded" it first starts the
// in-memory server; the returned func stops whatever connect started.
func (n *nbFlags) connect(ctx context.Context) (*observed.NB, func(), error) {
	if n.addr == "" {
		return nil, nil, errors.New("--nb is required (unix:PATH, tcp:HOST:PORT, ssl:HOST:PORT or embedded)")
	}
	ctx, cancel := context.WithTimeout(ctx, n.connectTimeout)
	defer cancel()
	if n.addr == "embedded" {
		e, err := observed.StartEmbedded()
		if err != nil {
			return nil, nil, err
		}
		nb, err := observed.Dial(ctx, observed.Options{Endpoints: []string{e.Endpoint}})
		if err != nil {
			e.Close()
			return nil, nil, err
		}
		return nb, func() { nb.Close(); e.Close() }, nil
	}
	eps, err := observed.ParseEndpoints(n.addr)
	if err != nil {
		return nil, nil, err
	}
	tlsCfg, err := n.tlsConfig()
	if err != nil {
		return nil, nil, err
	}
	nb, err := observed.Dial(ctx, observed.Options{Endpoints: eps, TLS: tlsCfg, LeaderOnly: true})
	if err != nil {
		return nil, nil, err
	}
	return nb, nb.Close, nil
}

// oneShot holds what plan and apply share.
type oneShot struct {
	fs       *flag.FlagSet
	files    stringList
	net      networkFlags
	nb       nbFlags
	output   string
	exitCode bool
}

func newOneShot(name string, stderr io.Writer) *oneShot {
	o := &oneShot{fs: flag.NewFlagSet(name, flag.ContinueOnError)}
	o.fs.SetOutput(stderr)
	o.fs.Var(&o.files, "f", "manifest `file or directory` (repeatable)")
	o.fs.StringVar(&o.output, "o", "text", "output format: text or json")
	o.fs.BoolVar(&o.exitCode, "detailed-exitcode", false, "exit 0 when there are no changes, 2 when there are, 1 on error")
	o.net.register(o.fs)
	o.nb.register(o.fs)
	return o
}

func (o *oneShot) parse(args []string) error {
	if err := o.fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitError{0}
		}
		return exitError{1}
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

// pass is one reconciliation's inputs.
type pass struct {
	in  desired.Inputs
	cfg desired.Config
	nb  *observed.NB
	// policy is what diff.Compute is told; run mode withholds deletes until
	// every source has synced.
	policy diff.Policy
	// beforeApply, when set, sees every want right before its plan is sent
	// (run mode records it to tell its own NB changes from someone else's).
	beforeApply func(want state.State)
	// memo, when set, reuses the previous pass's want while neither the
	// inputs (inVersion) nor the NB snapshot changed: run mode's periodic
	// full pass over a quiet cluster then only diffs.
	memo      *desired.Memo
	inVersion uint64
}

// compute builds want from the inputs and the NB as it is now, and diffs.
func (p pass) compute() (diff.Plan, []desired.Problem, int) {
	c := p.computeAll()
	return c.plan, c.problems, c.owned
}

// computed is one computation of a pass.
type computed struct {
	want     state.State
	plan     diff.Plan
	problems []desired.Problem
	owned    int // our ports in have
}

func (p pass) computeAll() computed {
	have, haveVersion := p.nb.StateVersion()
	var want state.State
	var problems []desired.Problem
	if p.memo != nil {
		want, problems = p.memo.Build(p.in, p.cfg, have, desired.Versions{Inputs: p.inVersion, Have: haveVersion})
	} else {
		want, problems = desired.Build(p.in, p.cfg, have)
	}
	return computed{want: want, plan: diff.Compute(want, have, p.policy), problems: problems, owned: have.OwnedPorts()}
}

func printProblems(w io.Writer, problems []desired.Problem) {
	for _, pr := range problems {
		fmt.Fprintln(w, pr.String())
	}
}

func printNotes(w io.Writer, notes []sources.Note) {
	for _, n := range notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
}

// jsonReport is the -o json document of plan and apply.
type jsonReport struct {
	Plan     diff.Plan         `json:"plan"`
	Problems []desired.Problem `json:"problems"`
	Applied  *apply.Result     `json:"applied,omitempty"`
}

func writeJSON(w io.Writer, r jsonReport) error {
	if r.Problems == nil {
		r.Problems = []desired.Problem{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// prepare reads the manifests and config and connects to the NB.
func (o *oneShot) prepare(ctx context.Context, stderr io.Writer) (pass, func(), error) {
	cfg, err := o.net.load(o.fs, os.ReadFile)
	if err != nil {
		return pass{}, nil, err
	}
	in, notes, err := sources.ReadManifests(o.files)
	if err != nil {
		return pass{}, nil, err
	}
	printNotes(stderr, notes)
	nb, stop, err := o.nb.connect(ctx)
	if err != nil {
		return pass{}, nil, err
	}
	return pass{in: in, cfg: cfg, nb: nb}, stop, nil
}

// oneShotCommand parses a plan or apply command line, reads the manifests,
// connects to the NB and hands the pass to body.
func oneShotCommand(name string, args []string, stderr io.Writer, body func(context.Context, *oneShot, pass) error) error {
	o := newOneShot(name, stderr)
	if err := o.parse(args); err != nil {
		return err
	}
	ctx, cancel := signalContext()
	defer cancel()
	p, stop, err := o.prepare(ctx, stderr)
	if err != nil {
		return err
	}
	defer stop()
	return body(ctx, o, p)
}

func cmdPlan(args []string, stdout, stderr io.Writer) error {
	return oneShotCommand("plan", args, stderr, func(_ context.Context, o *oneShot, p pass) error {
		return planOnce(o, p, stdout, stderr)
	})
}

func cmdApply(args []string, stdout, stderr io.Writer) error {
	return oneShotCommand("apply", args, stderr, func(ctx context.Context, o *oneShot, p pass) error {
		return applyOnce(ctx, o, p, stdout, stderr)
	})
}

func planOnce(o *oneShot, p pass, stdout, stderr io.Writer) error {
	plan, problems, _ := p.compute()
	if o.output == "json" {
		printProblems(stderr, problems)
		if err := writeJSON(stdout, jsonReport{Plan: plan, Problems: problems}); err != nil {
			return err
		}
	} else {
		printProblems(stdout, problems)
		fmt.Fprintln(stdout, plan.String())
	}
	if o.exitCode && !plan.Empty() {
		return exitError{2}
	}
	return nil
}

func applyOnce(ctx context.Context, o *oneShot, p pass, stdout, stderr io.Writer) error {
	plan, problems, res, err := applyPass(ctx, p, o.nb)
	if o.output == "json" {
		printProblems(stderr, problems)
		if jerr := writeJSON(stdout, jsonReport{Plan: plan, Problems: problems, Applied: &res}); jerr != nil && err == nil {
			err = jerr
		}
	} else {
		printProblems(stdout, problems)
		fmt.Fprintln(stdout, plan.String())
		if !plan.Empty() {
			fmt.Fprintf(stdout, "Applied %d operations in %d transactions.\n", res.Ops, len(res.Txns))
		}
	}
	if err != nil {
		return err
	}
	if o.exitCode && !plan.Empty() {
		return exitError{2}
	}
	return nil
}

// applyPass computes and applies one pass. A transaction that fails because
// the NB changed under it is not replayed: the pass is computed again from the
// refreshed cache, a few times, with a pause for the cache to catch up.
func applyPass(ctx context.Context, p pass, nf nbFlags) (diff.Plan, []desired.Problem, apply.Result, error) {
	c, res, err := reconcile(ctx, p, nf)
	return c.plan, c.problems, res, err
}

// reconcile is applyPass returning the last computation, want included.
func reconcile(ctx context.Context, p pass, nf nbFlags) (computed, apply.Result, error) {
	var total apply.Result
	for attempt := 0; ; attempt++ {
		c := p.computeAll()
		if !nf.allowMassDelete {
			if err := c.plan.CheckDeletes(c.owned, nf.maxDeleteFrac); err != nil {
				return c, total, err
			}
		}
		if p.beforeApply != nil {
			p.beforeApply(c.want)
		}
		res, err := apply.Apply(ctx, p.nb, c.plan, apply.Options{MaxOpsPerTxn: nf.maxOps, InFlight: nf.txnsInFlight})
		total.Add(res)
		if err == nil || !errors.Is(err, apply.ErrStale) || attempt >= 4 {
			return c, total, err
		}
		select {
		case <-ctx.Done():
			return c, total, ctx.Err()
		case <-time.After(time.Duration(50<<attempt) * time.Millisecond):
		}
	}
}
