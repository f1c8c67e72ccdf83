package reconcile

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/ovn-sync/ovn-sync/apply"
	"github.com/ovn-sync/ovn-sync/desired"
	"github.com/ovn-sync/ovn-sync/diff"
)

// WriteProblems prints Build's problems, one per line, then its notices
// (changes that wait, such as a running VM's new address request).
func (out Outcome) WriteProblems(w io.Writer) {
	for _, pr := range out.Result.Problems {
		fmt.Fprintln(w, pr.String())
	}
	for _, n := range out.Result.Notices {
		fmt.Fprintf(w, "notice: %s %s/%s: %s: %s\n", n.Kind, n.Namespace, n.Name, n.Reason, n.Message)
	}
}

// WritePlans prints every plan the pass computed, in order, as terraform
// prints a plan.
func (out Outcome) WritePlans(w io.Writer) {
	for _, p := range out.Earlier {
		fmt.Fprintln(w, p.String())
	}
	fmt.Fprintln(w, out.Plan.String())
	if s := out.Plan.Costs().String(); s != "" {
		fmt.Fprintln(w, s)
	}
	out.writeFullSwitches(w)
}

// WriteApplied is WritePlans after an apply: it also says what was sent.
func (out Outcome) WriteApplied(w io.Writer) {
	out.WritePlans(w)
	if out.Applied.Ops > 0 || !out.Plan.Empty() {
		fmt.Fprintf(w, "Applied %d operations in %d transactions.\n", out.Applied.Ops, len(out.Applied.Txns))
	}
}

// NearlyFull is the share of desired.MaxSwitchPorts past which the text
// of a plan names a switch.
const NearlyFull = 0.9

// writeFullSwitches names the switches that hold nearly as many ports as
// OVN binds on one switch, or as many.
func (out Outcome) writeFullSwitches(w io.Writer) {
	for _, sw := range slices.Sorted(maps.Keys(out.Result.SwitchPorts)) {
		if n := out.Result.SwitchPorts[sw]; float64(n) >= NearlyFull*desired.MaxSwitchPorts {
			fmt.Fprintf(w, "Switch %s holds %d ports of the %d OVN binds on one switch.\n", sw, n, desired.MaxSwitchPorts)
		}
	}
}

// The -o json document of plan and apply, written by writeJSON, holds:
//   - "plan": the plan (diff.Plan's JSON);
//   - "costs": the plan's changes by what they cost a guest (diff.Costs);
//   - "problems" and "notices": Build's;
//   - "applied" (apply only): what was sent (apply.Result);
//   - "switch_ports": the ports on each switch that holds ports once the
//     plan is applied (desired.Result.SwitchPorts), beside
//     "switch_port_limit", the most OVN binds on one.
//
// Lists are never null, and every entry that names a Kubernetes object —
// a change, a notice of the plan, a problem, a notice of Build — names it
// under "owner" as "Kind/namespace/name", with snake_case keys throughout.

// WriteJSON writes the outcome of a plan as one JSON document: the plan,
// the problems and notices.
func (out Outcome) WriteJSON(w io.Writer) error { return out.writeJSON(w, nil) }

// WriteAppliedJSON is WriteJSON for an apply: the document also says what
// was sent.
func (out Outcome) WriteAppliedJSON(w io.Writer) error {
	res := out.Applied
	if res.Txns == nil {
		res.Txns = []apply.Txn{}
	}
	return out.writeJSON(w, &res)
}

func (out Outcome) writeJSON(w io.Writer, applied *apply.Result) error {
	problems, notices, switches := out.Result.Problems, out.Result.Notices, out.Result.SwitchPorts
	if switches == nil {
		switches = map[string]int{}
	}
	doc := []diff.JSONMember{
		{Key: "plan", Object: out.Plan.JSONMembers()},
		{Key: "costs", Object: out.Plan.Costs().JSONMembers()},
		diff.JSONList("problems", problems),
		diff.JSONList("notices", notices),
	}
	if applied != nil {
		doc = append(doc, diff.JSONMember{Key: "applied", Value: applied})
	}
	doc = append(doc, diff.JSONMember{Key: "switch_ports", Value: switches},
		diff.JSONMember{Key: "switch_port_limit", Value: desired.MaxSwitchPorts})
	iw := indentWriter{w: bufio.NewWriterSize(w, 64<<10)}
	iw.object("", doc)
	iw.write("\n")
	if iw.err != nil {
		return iw.err
	}
	return iw.w.Flush()
}

// indentWriter writes JSON as json.Encoder does with SetIndent("", "  "),
// a member or element at a time.
type indentWriter struct {
	w   *bufio.Writer
	err error
	// encs encode a value into buf, one for each prefix: an Encoder
	// reuses its room from one value to the next, where MarshalIndent
	// allocates twice a value.
	encs map[string]*json.Encoder
	buf  bytes.Buffer
}

func (iw *indentWriter) write(s string) {
	if iw.err == nil {
		_, iw.err = iw.w.WriteString(s)
	}
}

// value writes v as MarshalIndent does, its lines after the first
// starting with prefix.
func (iw *indentWriter) value(prefix string, v any) {
	enc := iw.encs[prefix]
	if enc == nil {
		enc = json.NewEncoder(&iw.buf)
		enc.SetIndent(prefix, jsonIndent)
		if iw.encs == nil {
			iw.encs = map[string]*json.Encoder{}
		}
		iw.encs[prefix] = enc
	}
	iw.buf.Reset()
	if err := enc.Encode(v); err != nil && iw.err == nil {
		iw.err = err
	}
	if iw.err == nil { // Encode ends a value with a newline
		_, iw.err = iw.w.Write(bytes.TrimSuffix(iw.buf.Bytes(), []byte("\n")))
	}
}

const jsonIndent = "  "

// object writes an object of members whose closing brace is at prefix.
func (iw *indentWriter) object(prefix string, members []diff.JSONMember) {
	inner := prefix + jsonIndent
	iw.items(prefix, "{", "}", len(members), func(i int) {
		m := &members[i]
		iw.value(inner, m.Key)
		iw.write(": ")
		switch {
		case m.Elem != nil:
			elem := inner + jsonIndent
			iw.items(inner, "[", "]", m.Len, func(j int) { iw.value(elem, m.Elem(j)) })
		case m.Object != nil:
			iw.object(inner, m.Object)
		default:
			iw.value(inner, m.Value)
		}
	})
}

// items writes n items between open and end, each on a line of its own
// indented beyond prefix (end at prefix), or open and end alone for none.
func (iw *indentWriter) items(prefix, open, end string, n int, item func(i int)) {
	iw.write(open)
	line := "\n" + prefix + jsonIndent // each item's line begins so
	for i := range n {
		if i > 0 {
			iw.write(",")
		}
		iw.write(line)
		item(i)
	}
	if n > 0 {
		iw.write(line[:len(line)-len(jsonIndent)])
	}
	iw.write(end)
}
