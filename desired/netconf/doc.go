// Package netconf reads the network configuration ovn-sync is given into
// typed values: a NetworkAttachmentDefinition's CNI config
// (ParseNADConfig, ParseClaimConfig), a kube-ovn Subnet's spec
// (ParseSubnet, SubnetProvider), addresses, ranges and gateways (ParseIP,
// ParseIPRange, ParseSubnets, ParseGateways), native DHCP options
// (ParseDHCP, ParseDHCPOptions) and Kubernetes names (IsDNSLabel,
// IsDNSSubdomain).
//
// It is pure: each function depends on its arguments only. There is no
// builder here, no I/O, no clock and no goroutines. Package desired calls
// it to read its Config, its networks and the names and addresses owners
// ask for, and reports its errors as Problems on the object read, with the
// error's text in the message: a text names the field and the value, and
// changing one changes what users are told.
//
// Families are numbered IPv4 and IPv6, the index of every per-family array
// here and in desired.
package netconf
