package diff

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/ovn-sync/ovn-sync/state"
)

// TestData runs the scripts under testdata/. Commands:
//
//	want | have        the input is one row per line, replacing that state:
//	                     switch NAME [uuid=U] [owner=O] [network=N] [subnet=S] [ipv6=P]
//	                     port NAME [uuid=U] [switch=S] [owner=O] [network=N] [addr=A]... [ps=A]...
//	                          [chassis=C] [activation=A]
//	                   port_security defaults to the addresses; "ps=" empties it.
//	                   Values with spaces are double-quoted.
//	compute [withhold-deletes]   prints Plan.String()
//	json                         prints the last plan as indented JSON
func TestData(t *testing.T) {
	// Only the files directly in testdata: rapid keeps its failures in a
	// directory there.
	scripts, err := filepath.Glob("testdata/*")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range scripts {
		if fi, err := os.Stat(path); err != nil || fi.IsDir() {
			continue
		}
		t.Run(filepath.Base(path), func(t *testing.T) { runScript(t, path) })
	}
}

func runScript(t *testing.T, path string) {
	{
		var want, have state.State
		var plan Plan
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "want", "have":
				s, err := parseState(d.Input)
				if err != nil {
					d.Fatalf(t, "%v", err)
				}
				if d.Cmd == "want" {
					want = s
				} else {
					have = s
				}
				return ""
			case "compute":
				plan = Compute(want, have, Policy{WithholdDeletes: d.HasArg("withhold-deletes")})
				checkPlan(t, want, have, plan)
				return plan.String()
			case "json":
				b, err := json.MarshalIndent(plan, "", "  ")
				if err != nil {
					d.Fatalf(t, "json.Marshal: %v", err)
				}
				return string(b)
			}
			d.Fatalf(t, "unknown command %q", d.Cmd)
			return ""
		})
	}
}

// checkPlan asserts what every script's plan must satisfy: idempotence
// (nothing left to do after applying it, but withheld deletes) and that
// foreign rows are untouched.
func checkPlan(t *testing.T, want, have state.State, p Plan) {
	t.Helper()
	if msg := checkApplied(want, have, p); msg != "" {
		t.Errorf("plan.ApplyTo(have): %s\nplan:\n%s", msg, p)
	}
}

func parseState(input string) (state.State, error) {
	s := state.New(0)
	for n, line := range strings.Split(input, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		words, err := split(line)
		if err != nil {
			return s, fmt.Errorf("line %d: %v", n+1, err)
		}
		if len(words) < 2 {
			return s, fmt.Errorf("line %d: want `switch|port NAME k=v...`", n+1)
		}
		name := words[1]
		kv := words[2:]
		switch words[0] {
		case "switch":
			sw := &state.Switch{Name: name}
			for _, w := range kv {
				k, v, _ := strings.Cut(w, "=")
				switch k {
				case "uuid":
					sw.UUID = v
				case "owner":
					sw.Owner = v
				case "network":
					sw.Network = v
				case "subnet":
					sw.Subnet = v
				case "ipv6":
					sw.IPv6Prefix = v
				default:
					return s, fmt.Errorf("line %d: unknown switch key %q", n+1, k)
				}
			}
			s.Switches[name] = sw
		case "port":
			p := &state.Port{Name: name}
			psSet := false
			for _, w := range kv {
				k, v, _ := strings.Cut(w, "=")
				switch k {
				case "uuid":
					p.UUID = v
				case "switch":
					p.Switch = v
				case "owner":
					p.Owner = v
				case "network":
					p.Network = v
				case "addr":
					p.Addresses = append(p.Addresses, v)
				case "ps":
					psSet = true
					if v != "" {
						p.PortSecurity = append(p.PortSecurity, v)
					}
				case "chassis":
					p.RequestedChassis = v
				case "activation":
					p.ActivationStrategy = v
				default:
					return s, fmt.Errorf("line %d: unknown port key %q", n+1, k)
				}
			}
			if !psSet {
				p.PortSecurity = p.Addresses
			}
			s.Ports[name] = p
		default:
			return s, fmt.Errorf("line %d: unknown row kind %q", n+1, words[0])
		}
	}
	return s, nil
}

// split splits a line at spaces, keeping double-quoted values (k="a b") whole.
func split(line string) ([]string, error) {
	var words []string
	for line = strings.TrimSpace(line); line != ""; line = strings.TrimSpace(line) {
		i := strings.IndexAny(line, " \"")
		if i < 0 {
			words = append(words, line)
			break
		}
		if line[i] == ' ' {
			words = append(words, line[:i])
			line = line[i:]
			continue
		}
		q, err := strconv.QuotedPrefix(line[i:])
		if err != nil {
			return nil, fmt.Errorf("bad quoting in %q", line)
		}
		v, _ := strconv.Unquote(q)
		words = append(words, line[:i]+v)
		line = line[i+len(q):]
	}
	return words, nil
}
