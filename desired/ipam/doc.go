// Package ipam says who holds which address in one Build, and which are
// free: the NB's rows and the ports the Build gives addresses (Table), the
// address book the engine keeps of the NB's rows of ours between passes
// (Book, NBBook), bit windows over the low end of a subnet where fresh
// addresses are handed out (Window), and pools that hand out a subnet's
// free addresses lowest first (Pool).
//
// It is pure. Who may hold an address, and who gives way when two hold one
// (a request, a record, the older owner, a running guest), is decided in
// package desired (ipam.go), which reads and writes the Table:
//
//	t := ipam.List(have.Ports, switchID, n)       // a Build of every owner
//	t := ipam.Booked(book, have, switchID)        // a Build of some
//	t.OpenWindows(needs, n); t.Reserve(rs)
//	for _, g := range t.Duplicates() { ... }      // first, before any HoldersOf
//	id := t.Claimant(); t.Set(sw.ID, key, id)
//	t.IsHeld(sw, key); t.NextFree(sw, comp, a); t.HoldersOf(key, sw.ID)
package ipam
