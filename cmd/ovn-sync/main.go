// Command ovn-sync keeps the Logical_Switch_Ports of an OVN northbound
// database equal to what a Kubernetes cluster declares.
//
//	ovn-sync run   --nb ADDR [--kubeconfig F]           keep the NB in sync with a cluster (sidecar)
//	ovn-sync plan  -f DIR|FILE... --nb ADDR|embedded   show what would change
//	ovn-sync apply -f DIR|FILE... --nb ADDR|embedded   make one pass and print what was done
//	ovn-sync explain KIND/NS/NAME|PORT -f ...|--kubeconfig F --nb ADDR   where each address comes from
//	ovn-sync demo                                      the whole pipeline on an embedded NB
//	ovn-sync version
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// version is set at build time (-ldflags "-X main.version=...").
var version = "dev"

// exitError carries a process exit code without printing anything more.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func usage(w io.Writer) {
	fmt.Fprint(w, `ovn-sync keeps OVN northbound Logical_Switch_Ports equal to what Kubernetes declares.

Usage:
  ovn-sync run   --nb ADDR [--kubeconfig FILE] [--config FILE] [--resync 5m] [--leader-elect] [--metrics-addr :9476]
  ovn-sync plan  -f DIR|FILE|-... --nb ADDR|embedded [--config FILE] [-o text|json] [--detailed-exitcode]
  ovn-sync apply -f DIR|FILE|-... --nb ADDR|embedded [--config FILE] [-o text|json]
  ovn-sync explain KIND/NAMESPACE/NAME|PORT (-f DIR|FILE... | --kubeconfig FILE) --nb ADDR [-o text|json]
  ovn-sync demo
  ovn-sync version

Run "ovn-sync COMMAND -h" for a command's flags.
`)
}

// run is main without the process: it returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 1
	}
	var err error
	switch args[0] {
	case "run":
		err = cmdRun(args[1:], stdout, stderr)
	case "plan":
		err = cmdPlan(args[1:], stdout, stderr)
	case "apply":
		err = cmdApply(args[1:], stdout, stderr)
	case "explain":
		err = cmdExplain(args[1:], stdout, stderr)
	case "demo":
		err = cmdDemo(args[1:], stdout, stderr)
	case "version", "--version":
		if len(args) > 1 {
			err = fmt.Errorf("takes no arguments or flags, got %q", args[1:])
			break
		}
		fmt.Fprintf(stdout, "ovn-sync %s\n", version)
	case "help", "-h", "--help":
		usage(stdout)
	default:
		fmt.Fprintf(stderr, "ovn-sync: unknown command %q\n\n", args[0])
		usage(stderr)
		return 1
	}
	var ee exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.code
	default:
		fmt.Fprintf(stderr, "ovn-sync %s: %v\n", args[0], err)
		return 1
	}
}
