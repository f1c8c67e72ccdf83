package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/ovn-sync/ovn-sync/desired"
	"github.com/ovn-sync/ovn-sync/internal/nbtest"
)

// TestHostileInputAgainstRealNB runs the hostile-input scripts of package
// desired (desired/testdata/hostile, see TestHostileInput there) end to end:
// each against a fresh ovsdb-server already holding the example cluster,
// each command one `ovn-sync apply -o json` over examples/cluster plus the
// command's objects. The output must be what the unit harness prints: the
// problems ovn-sync reported and the ports it created or deleted. After an
// "after" command every Logical_Switch_Port and Logical_Switch row that
// existed before it must be byte-for-byte what it was (same UUID, same
// addresses, port_security, options, external_ids, other_config), and a
// second apply must change nothing.
func TestHostileInputAgainstRealNB(t *testing.T) {
	nbtest.Require(t)
	scripts, err := filepath.Glob("../../desired/testdata/hostile/*")
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no scripts under desired/testdata/hostile: %v", err)
	}
	for _, path := range scripts {
		t.Run(filepath.Base(path), func(t *testing.T) {
			s := nbtest.Start(t)
			applyOK(t, s, stage(t, nil))
			datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
				if d.Cmd != "before" && d.Cmd != "after" {
					d.Fatalf(t, "unknown command %q", d.Cmd)
				}
				dir := stage(t, nil)
				if err := os.WriteFile(filepath.Join(dir, "zz-hostile.yaml"), []byte(d.Input), 0o644); err != nil {
					t.Fatal(err)
				}
				prevPorts, prevSwitches := nbRows(t, s, "Logical_Switch_Port"), nbRows(t, s, "Logical_Switch")
				problems := applyJSON(t, s, dir)
				ports, switches := nbRows(t, s, "Logical_Switch_Port"), nbRows(t, s, "Logical_Switch")

				var out strings.Builder
				for _, p := range problems {
					fmt.Fprintf(&out, "problem %s %s/%s %s: %s\n", p.Kind, p.Namespace, p.Name, p.Reason, p.Message)
				}
				var names []string
				for n := range ports {
					if _, ok := prevPorts[n]; !ok {
						names = append(names, n)
					}
				}
				for n := range prevPorts {
					if _, ok := ports[n]; !ok {
						names = append(names, n)
					}
				}
				slices.Sort(names)
				for _, n := range names {
					if _, ok := ports[n]; ok {
						fmt.Fprintf(&out, "+ port %s %s\n", n, strings.Join(addressSet(t, s, n), ","))
					} else {
						fmt.Fprintf(&out, "- port %s\n", n)
					}
				}
				if d.Cmd == "after" {
					for _, c := range []struct {
						table      string
						prev, next map[string]string
					}{{"Logical_Switch_Port", prevPorts, ports}, {"Logical_Switch", prevSwitches, switches}} {
						for _, n := range slices.Sorted(maps.Keys(c.prev)) {
							if c.next[n] != c.prev[n] {
								t.Errorf("%s: %s %q changed:\nbefore %s\nafter  %s", d.Pos, c.table, n, c.prev[n], c.next[n])
							}
						}
					}
				}
				before := s.Commits()
				if again := applyOK(t, s, dir); !strings.Contains(again, "No changes.") {
					t.Errorf("%s: a second apply changed something:\n%s", d.Pos, again)
				}
				if n := s.Commits() - before; n != 0 {
					t.Errorf("%s: a second apply committed %d transactions", d.Pos, n)
				}
				return out.String()
			})
		})
	}
}

// applyJSON runs one `ovn-sync apply -o json` and returns its problems.
func applyJSON(t *testing.T, s *nbtest.Server, dir string) []desired.Problem {
	t.Helper()
	out, errOut, code := ovnSync(t, "apply", "-f", dir, "--nb", s.Addr(), "--config", "../../examples/ovn-sync.yaml", "-o", "json")
	if code != 0 {
		t.Fatalf("ovn-sync apply -o json: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	var r struct {
		Problems []desired.Problem `json:"problems"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("apply -o json output: %v\n%s", err, out)
	}
	return r.Problems
}

// nbRows returns every row of table (Logical_Switch_Port or Logical_Switch)
// by name, each as ovn-nbctl prints it in JSON: the columns ovn-sync writes
// and _uuid, so that equal strings mean an untouched row.
func nbRows(t *testing.T, s *nbtest.Server, table string) map[string]string {
	t.Helper()
	cols := "_uuid,name,addresses,port_security,dynamic_addresses,options,external_ids,type,enabled"
	if table == "Logical_Switch" {
		cols = "_uuid,name,other_config,external_ids"
	}
	out := s.NBCtl("--format=json", "--columns="+cols, "list", table)
	var res struct {
		Headings []string            `json:"headings"`
		Data     [][]json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("ovn-nbctl list %s: %v", table, err)
	}
	name := slices.Index(res.Headings, "name")
	rows := make(map[string]string, len(res.Data))
	for _, row := range res.Data {
		var n string
		if err := json.Unmarshal(row[name], &n); err != nil {
			t.Fatalf("%s name %s: %v", table, row[name], err)
		}
		b, _ := json.Marshal(row)
		rows[n] = string(b)
	}
	return rows
}

// addressSet returns the addresses column of port name.
func addressSet(t *testing.T, s *nbtest.Server, name string) []string {
	t.Helper()
	raw := s.NBCtl("get", "Logical_Switch_Port", name, "addresses")
	raw = strings.TrimSuffix(strings.TrimPrefix(raw, "["), "]")
	var out []string
	for _, q := range strings.Split(raw, ", ") {
		if q == "" {
			continue
		}
		v, err := strconv.Unquote(q)
		if err != nil {
			v = q
		}
		out = append(out, v)
	}
	return out
}
