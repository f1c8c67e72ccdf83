// Package statetext reads and prints a state.State as text, one row a line,
// for tests: the states of desired's and diff's data-driven scripts and of
// their failure messages.
//
//	switch NAME [uuid=U] [owner=O] [network=N] [subnet=S] [ipv6_prefix=P]
//	port NAME [uuid=U] [switch=S] [owner=O] [network=N] [addresses=A]...
//	     [port_security=A|none]... [dynamic=D] [requested-chassis=C] [activation-strategy=A]
//	     [dhcpv4=D] [dhcpv6=D] [vendor=V] [vendor-switch=S] [adopt=V]
//	dhcp NAME [uuid=U] [owner=O] [network=N] [cidr=C] [option:KEY=VALUE]...
//
// Each key names the column or map key it holds (ipv6_prefix is
// other_config:ipv6_prefix, requested-chassis is options:requested-chassis,
// dynamic is dynamic_addresses, vendor and vendor-switch are kube-ovn's
// external_ids:vendor and external_ids:ls, dhcpv4 and dhcpv6 are the
// dhcpv4_options and dhcpv6_options references, by the DHCP_Options row's
// name); a dhcp row is a DHCP_Options row named by its
// external_ids:ovn-sync/dhcp, each option:KEY one key of its options; adopt is state.Port's Adopt, a
// desired port's note that it takes over the row of its name. A value holding a space, a double quote or
// a character that does not print is written in Go's double-quoted syntax,
// as is every entry of addresses and port_security; an empty value is an
// unset column and is not written. A port without port_security has its
// addresses as port_security, the way ovn-sync writes them; a bare
// port_security=none empties it.
//
// Print writes switches, then dhcp rows, then ports, each sorted by name
// (options by key), and the keys in
// the order above, so its output is the same for the same State. Parse
// reads keys in any order, skips blank lines and lines starting with #, and
// rejects an unknown key, a key given twice and a row named twice.
// Parse(Print(s)) equals s (Index aside, which Parse leaves nil).
package statetext
