package reconcile

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ovn-sync/ovn-sync/apply"
	"github.com/ovn-sync/ovn-sync/bench"
	"github.com/ovn-sync/ovn-sync/desired"
	"github.com/ovn-sync/ovn-sync/diff"
	"github.com/ovn-sync/ovn-sync/state"
)

// badAndWeb are two pods: one asking for an address that is none, and one
// to create a port for.
const badAndWeb = `apiVersion: v1
kind: Pod
metadata: {name: bad, namespace: default, annotations: {ovn.kubernetes.io/ip_address: "999.1.1.1"}}
spec: {nodeName: node-1, containers: [{name: c, image: busybox}]}
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default}
spec: {nodeName: node-1, containers: [{name: c, image: busybox}]}
`

// TestWriteJSONShape: plan -o json has one shape for every entry that
// names a Kubernetes object — changes, the plan's notices, problems and
// Build's notices all name it under "owner", with lower-case keys — and
// every list is [] when empty, never null.
func TestWriteJSONShape(t *testing.T) {
	in := manifests(t, badAndWeb)
	r := desired.Build(in, config(t), state.New(0))
	out := Outcome{Result: r}
	out.Plan = Compute(embeddedNB(t), All(in), Options{Config: config(t)}).Plan
	var b bytes.Buffer
	if err := out.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Plan struct {
			Changes []map[string]any `json:"changes"`
			Notices []map[string]any `json:"notices"`
		} `json:"plan"`
		Problems []map[string]any `json:"problems"`
		Notices  []map[string]any `json:"notices"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("WriteJSON: %v\n%s", err, b.String())
	}
	if len(doc.Problems) != 1 || doc.Problems[0]["owner"] != "Pod/default/bad" || doc.Problems[0]["reason"] != "InvalidAddressRequest" ||
		!strings.Contains(doc.Problems[0]["message"].(string), "999.1.1.1") {
		t.Errorf("problems = %v, want one with owner Pod/default/bad, its reason and message", doc.Problems)
	}
	var webChange bool
	for _, c := range doc.Plan.Changes {
		webChange = webChange || c["owner"] == "Pod/default/web"
	}
	if !webChange {
		t.Errorf("changes = %v, want one with owner Pod/default/web", doc.Plan.Changes)
	}
	for _, key := range []string{"Kind", "Namespace", "Name", "Reason", "Message"} {
		if strings.Contains(b.String(), `"`+key+`"`) {
			t.Errorf("WriteJSON has key %q: keys are lower-case in every list\n%s", key, b.String())
		}
	}
	for _, empty := range []string{`"notices": []`} {
		if strings.Count(b.String(), empty) != 2 {
			t.Errorf("WriteJSON lacks %s twice (the plan's and Build's)\n%s", empty, b.String())
		}
	}

	// apply -o json: "transactions" is [] when nothing was sent.
	b.Reset()
	if err := (Outcome{}).WriteAppliedJSON(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"problems": []`, `"transactions": []`, `"changes": []`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("WriteJSON of an empty apply lacks %s\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "null") {
		t.Errorf("WriteJSON of an empty apply has null\n%s", b.String())
	}
}

// The document is written a member and a change at a time, byte for byte
// as encoding/json's indenting Encoder writes it whole: changes of each
// action and kind, notices, problems, what was applied, and text
// encoding/json escapes.
func TestWriteJSONAsEncoder(t *testing.T) {
	in := manifests(t, badAndWeb)
	out := Compute(embeddedNB(t), All(in), Options{Config: config(t)})
	before := &state.Port{Name: "old<&>", UUID: "u1", Switch: "sw", Addresses: []string{"0a:58:0a:10:00:09 10.16.0.9"}}
	after := &state.Port{Name: "old<&>", Switch: "sw", Addresses: []string{"0a:58:0a:10:00:0a 10.16.0.10"}}
	out.Plan.Changes = append(out.Plan.Changes,
		diff.Change{Action: diff.Update, Kind: diff.KindPort, Name: after.Name, Owner: "Pod/a/\u2028", Reason: "r", Fields: 1, Before: before, After: after},
		diff.Change{Action: diff.Delete, Kind: diff.KindPort, Name: before.Name, Reason: "gone", Before: before},
		diff.Change{Action: diff.Delete, Kind: diff.KindSwitch, Name: "sw", SwitchBefore: &state.Switch{Name: "sw", UUID: "s1"}})
	out.Plan.Notices = []diff.Notice{{Kind: diff.KindPort, Name: "p", Owner: "Pod/a/p", Reason: "kept"}}
	out.Plan.Withheld = 2
	out.Applied = apply.Result{Created: 1, Ops: 3, Txns: []apply.Txn{{Ops: 3, Attempts: 1, Latency: 5}}, Refused: []string{"sw"}}
	for name, o := range map[string]Outcome{"a plan": out, "nothing": {}} {
		for _, applied := range []bool{false, true} {
			var got, want bytes.Buffer
			if applied {
				if err := o.WriteAppliedJSON(&got); err != nil {
					t.Fatal(err)
				}
			} else if err := o.WriteJSON(&got); err != nil {
				t.Fatal(err)
			}
			encodeWhole(t, &want, o, applied)
			if got.String() != want.String() {
				t.Errorf("%s, applied %v: written\n%s\nencoding/json writes\n%s", name, applied, got.String(), want.String())
			}
		}
	}
}

// encodeWhole writes out's document with encoding/json, whole.
func encodeWhole(t *testing.T, w *bytes.Buffer, out Outcome, applied bool) {
	t.Helper()
	r := struct {
		Plan     diff.Plan         `json:"plan"`
		Costs    diff.Costs        `json:"costs"`
		Problems []desired.Problem `json:"problems"`
		Notices  []desired.Problem `json:"notices"`
		Applied  *apply.Result     `json:"applied,omitempty"`
		Switches map[string]int    `json:"switch_ports"`
		Limit    int               `json:"switch_port_limit"`
	}{Plan: out.Plan, Costs: out.Plan.Costs(), Problems: out.Result.Problems, Notices: out.Result.Notices,
		Switches: out.Result.SwitchPorts, Limit: desired.MaxSwitchPorts}
	if applied {
		r.Applied = &out.Applied
		if r.Applied.Txns == nil {
			r.Applied.Txns = []apply.Txn{}
		}
	}
	if r.Switches == nil {
		r.Switches = map[string]int{}
	}
	if r.Problems == nil {
		r.Problems = []desired.Problem{}
	}
	if r.Notices == nil {
		r.Notices = []desired.Problem{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		t.Fatal(err)
	}
}

// TestProblemJSONRoundTrip: a Problem reads back what it writes, with and
// without a namespace.
func TestProblemJSONRoundTrip(t *testing.T) {
	for _, p := range []desired.Problem{
		{Kind: "Pod", Namespace: "ns", Name: "a", Reason: "R", Message: "m"},
		{Kind: "Config", Name: "defaultNetwork", Reason: "InvalidConfig", Message: "no subnets"},
	} {
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		var got desired.Problem
		if err := json.Unmarshal(b, &got); err != nil || got != p {
			t.Errorf("Unmarshal(Marshal(%+v)) = %+v, %v (JSON %s)", p, got, err, b)
		}
	}
}

// BenchmarkWriteJSON writes the apply -o json document of a plan that
// creates every port of a generated cluster.
func BenchmarkWriteJSON(b *testing.B) {
	in := bench.Cluster(30000)
	r := desired.Build(in, bench.Config(), state.New(0))
	out := Outcome{Result: r, Plan: diff.Compute(r.Want, state.New(0), diff.Policy{})}
	var buf bytes.Buffer
	if err := out.WriteAppliedJSON(&buf); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(buf.Len()))
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		if err := out.WriteAppliedJSON(&buf); err != nil {
			b.Fatal(err)
		}
	}
}
