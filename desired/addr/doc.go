// Package addr holds the values IPAM works in: MACs, the entry of a
// Logical_Switch_Port's addresses column, an address as a comparable key,
// address ranges, bit windows that mark which addresses of a subnet are
// held, pools that hand out a subnet's free addresses lowest first, and the
// address book (Book) that says which ports hold an address.
//
// It is pure and small: no builder, no Kubernetes objects, no OVSDB. Which
// port may hold which address, and who gives way when two hold one, is
// decided in package desired (ipam.go); this package only says what an
// address is and where it lies.
package addr
