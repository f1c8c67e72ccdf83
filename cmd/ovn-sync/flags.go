package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// stdin is what -f - reads; tests replace it.
var stdin io.Reader = os.Stdin

// refused maps a flag a command registers with a group it shares with other
// commands (the NB flags, say) but that does nothing for it, to why.
type refused map[string]string

// parseFlags parses args with fs. A flag in no is refused with an error
// naming it and why, rather than silently ignored; -h lists only the flags
// the command takes.
func parseFlags(fs *flag.FlagSet, args []string, no refused) error {
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage of %s:\n", fs.Name())
		shown := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
		shown.SetOutput(fs.Output())
		fs.VisitAll(func(f *flag.Flag) {
			if _, ok := no[f.Name]; !ok {
				shown.Var(f.Value, f.Name, f.Usage)
				shown.Lookup(f.Name).DefValue = f.DefValue
			}
		})
		shown.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitError{0}
		}
		return exitError{1}
	}
	var given []string
	fs.Visit(func(f *flag.Flag) {
		if _, ok := no[f.Name]; ok {
			given = append(given, f.Name)
		}
	})
	sort.Strings(given)
	if len(given) > 0 {
		return fmt.Errorf("--%s does nothing for %s: %s", given[0], fs.Name(), no[given[0]])
	}
	return nil
}

// checkTLS refuses certificate flags when --nb names no ssl: endpoint: they
// would be ignored.
func (n *nbFlags) checkTLS() error {
	if n.cert == "" && n.key == "" && n.ca == "" {
		return nil
	}
	for _, ep := range strings.Split(n.addr, ",") {
		if strings.HasPrefix(strings.TrimSpace(ep), "ssl:") {
			return nil
		}
	}
	return fmt.Errorf("--nb-cert, --nb-key and --nb-ca are for ssl: endpoints, and --nb %q has none", n.addr)
}

// Flags a command that writes nothing does not take.
var writeFlags = refused{
	"max-ops-per-txn":     "it sends no transactions",
	"txns-in-flight":      "it sends no transactions",
	"max-delete-fraction": "it deletes nothing (the mass-delete guard is apply's and run's)",
	"allow-mass-delete":   "it deletes nothing (the mass-delete guard is apply's and run's)",
}
