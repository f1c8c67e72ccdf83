// Package addr holds the values IPAM works in: MACs, the entry of a
// Logical_Switch_Port's addresses column, an address as a comparable key,
// and address ranges.
//
// It is pure and small: no builder, no Kubernetes objects, no OVSDB. Who
// holds which address is package ipam's; which port may hold it, and who
// gives way when two hold one, package desired's (ipam.go). This package
// only says what an address is and where it lies.
package addr
