package dataplane

import (
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// LSP is what the NB holds for a port, as the test reads it.
type LSP struct {
	Addresses        []string
	PortSecurity     []string
	RequestedChassis string
	Up               bool
}

// LSP reads the port named name from the NB.
func (e *Env) LSP(name string) (LSP, error) {
	out, err := e.TryCmd("ovn-nbctl", "--db="+e.NB, "--timeout=60", "--format=json",
		"--columns=addresses,port_security,options,up", "find", "Logical_Switch_Port", "name="+name)
	if err != nil {
		return LSP{}, err
	}
	rows, err := parseTable(out)
	if err != nil {
		return LSP{}, err
	}
	if len(rows) != 1 {
		return LSP{}, fmt.Errorf("port %s: %d rows", name, len(rows))
	}
	r := rows[0]
	return LSP{Addresses: set(r["addresses"]), PortSecurity: set(r["port_security"]),
		RequestedChassis: mapOf(r["options"])["requested-chassis"], Up: r["up"] == true}, nil
}

// Binding is the SB Port_Binding of a port, with chassis by name.
type Binding struct {
	Chassis, AdditionalChassis                   []string
	RequestedChassis, RequestedAdditionalChassis []string
	Options                                      map[string]string
}

// Binding reads the SB Port_Binding of the port named name.
func (e *Env) Binding(name string) (Binding, error) {
	out, err := e.TryCmd("ovn-sbctl", "--db="+e.SB, "--timeout=60", "--format=json",
		"--columns=chassis,additional_chassis,requested_chassis,requested_additional_chassis,options",
		"find", "Port_Binding", "logical_port="+name)
	if err != nil {
		return Binding{}, err
	}
	rows, err := parseTable(out)
	if err != nil {
		return Binding{}, err
	}
	if len(rows) != 1 {
		return Binding{}, fmt.Errorf("port binding %s: %d rows", name, len(rows))
	}
	out, err = e.TryCmd("ovn-sbctl", "--db="+e.SB, "--timeout=60", "--format=json", "--columns=_uuid,name", "list", "Chassis")
	if err != nil {
		return Binding{}, err
	}
	chassis, err := parseTable(out)
	if err != nil {
		return Binding{}, err
	}
	names := map[string]string{}
	for _, c := range chassis {
		names[fmt.Sprint(uuidOf(c["_uuid"]))] = fmt.Sprint(c["name"])
	}
	byName := func(v any) []string {
		var out []string
		for _, u := range set(v) {
			out = append(out, names[u])
		}
		return out
	}
	r := rows[0]
	return Binding{Chassis: byName(r["chassis"]), AdditionalChassis: byName(r["additional_chassis"]),
		RequestedChassis: byName(r["requested_chassis"]), RequestedAdditionalChassis: byName(r["requested_additional_chassis"]),
		Options: mapOf(r["options"])}, nil
}

// parseTable reads ovn-*ctl --format=json output into one map per row.
func parseTable(s string) ([]map[string]any, error) {
	var t struct {
		Headings []string `json:"headings"`
		Data     [][]any  `json:"data"`
	}
	if err := json.Unmarshal([]byte(s), &t); err != nil {
		return nil, fmt.Errorf("%q: %w", s, err)
	}
	var rows []map[string]any
	for _, d := range t.Data {
		r := map[string]any{}
		for i, h := range t.Headings {
			if i < len(d) {
				r[h] = d[i]
			}
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// set reads an OVSDB JSON set (["set", [...]] or one atom) as strings;
// UUIDs as their text.
func set(v any) []string {
	if a, ok := v.([]any); ok && len(a) == 2 && a[0] == "set" {
		var out []string
		for _, x := range a[1].([]any) {
			out = append(out, fmt.Sprint(uuidOf(x)))
		}
		return out
	}
	if v == nil {
		return nil
	}
	return []string{fmt.Sprint(uuidOf(v))}
}

// uuidOf returns the text of ["uuid", "..."], or v itself.
func uuidOf(v any) any {
	if a, ok := v.([]any); ok && len(a) == 2 && (a[0] == "uuid" || a[0] == "named-uuid") {
		return a[1]
	}
	return v
}

// mapOf reads an OVSDB JSON map (["map", [[k, v], ...]]).
func mapOf(v any) map[string]string {
	out := map[string]string{}
	a, ok := v.([]any)
	if !ok || len(a) != 2 || a[0] != "map" {
		return out
	}
	for _, kv := range a[1].([]any) {
		p := kv.([]any)
		out[fmt.Sprint(p[0])] = fmt.Sprint(p[1])
	}
	return out
}

// ParseAddresses reads an LSP addresses entry, "<mac> <ip>...".
func ParseAddresses(s string) (net.HardwareAddr, []netip.Addr, error) {
	f := strings.Fields(s)
	if len(f) < 2 {
		return nil, nil, fmt.Errorf("addresses %q: want a MAC and addresses", s)
	}
	mac, err := net.ParseMAC(f[0])
	if err != nil {
		return nil, nil, fmt.Errorf("addresses %q: %w", s, err)
	}
	var ips []netip.Addr
	for _, x := range f[1:] {
		a, err := netip.ParseAddr(x)
		if err != nil {
			return nil, nil, fmt.Errorf("addresses %q: %w", s, err)
		}
		ips = append(ips, a)
	}
	return mac, ips, nil
}
