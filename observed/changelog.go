package observed

import (
	"sync"

	"github.com/ovn-org/libovsdb/model"
	"github.com/ovn-org/libovsdb/ovsdb"

	"github.com/ovn-sync/ovn-sync/nbdb"
)

// changes are rows changed since a snapshot: the UUIDs of the ports and
// switches added, updated or deleted, and whether a DHCP_Options row was.
type changes struct {
	ports, switches map[string]struct{}
	dhcp            bool
	// refs says the ports referring to a DHCP_Options row may have
	// changed: a row deleted takes the references to it with it.
	refs bool
	// all says which rows changed is not known: every row is to be read.
	all bool
}

// changeLog collects the changes the cache's event handler reports, for
// StateVersion to take. The handler runs on libovsdb's event goroutine
// after the cache applied the change, so a row taken from here is read
// from the cache as it is since.
type changeLog struct {
	mu sync.Mutex
	// c.all is set until the first snapshot and when libovsdb dropped an
	// event; rows are not collected while it is set.
	c changes
}

// add records that row, of one of the cache's tables StateVersion reads,
// changed.
func (l *changeLog) add(row model.Model) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.c.all {
		return
	}
	switch r := row.(type) {
	case *nbdb.LogicalSwitch:
		l.c.switches = addUUID(l.c.switches, r.UUID)
	case *nbdb.DHCPOptions:
		l.c.dhcp = true
	}
}

// addPort records that the port row uuid changed.
func (l *changeLog) addPort(uuid string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.c.all {
		l.c.ports = addUUID(l.c.ports, uuid)
	}
}

func addUUID(set map[string]struct{}, uuid string) map[string]struct{} {
	if set == nil {
		set = map[string]struct{}{}
	}
	set[uuid] = struct{}{}
	return set
}

// sent records the rows a transaction of ours changed, once it
// committed: ops as sent, res as the server answered. ovsdb-server sends
// a transaction's updates to the monitor before its reply, and libovsdb
// applies them to the cache in order as they arrive, so the cache holds
// them when Transact returns; its event handler reports them later, on a
// goroutine of its own. Without this a snapshot taken right after our
// own transaction would not show it: the next pass would plan the same
// rows again. The rows are those an operation names by _uuid, those it
// inserted, and the ports a mutation of a switch's ports adds or takes
// out (a port taken out is deleted); switches named otherwise are all
// read again (switches, from the cache, lists them: they are few). The
// handler's later report of the same rows reads them again, to no
// effect. A transaction that failed changed nothing.
func (l *changeLog) sent(ops []ovsdb.Operation, res []ovsdb.OperationResult, switches func() []string) {
	if len(res) < len(ops) {
		return
	}
	for i := range ops {
		if res[i].Error != "" {
			return
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.c.all {
		return
	}
	everySwitch := false
	for i, op := range ops {
		var set *map[string]struct{}
		switch op.Table {
		case nbdb.LogicalSwitchPortTable:
			set = &l.c.ports
		case nbdb.LogicalSwitchTable:
			set = &l.c.switches
		case nbdb.DHCPOptionsTable:
			l.c.dhcp = true
			l.c.refs = l.c.refs || op.Op == ovsdb.OperationDelete
			continue
		default:
			continue
		}
		byUUID := false
		if op.Op == ovsdb.OperationInsert {
			*set = addUUID(*set, res[i].UUID.GoUUID)
			byUUID = true
		}
		for _, c := range op.Where {
			if u, ok := c.Value.(ovsdb.UUID); ok && c.Column == "_uuid" && c.Function == ovsdb.ConditionEqual {
				*set = addUUID(*set, u.GoUUID)
				byUUID = true
			}
		}
		if op.Table != nbdb.LogicalSwitchTable {
			continue
		}
		if op.Op == ovsdb.OperationDelete && !onlyEmpty(op.Where) {
			// The ports of a switch deleted go with it, and which those
			// are the cache does not say (it does not monitor ports).
			l.c = changes{all: true}
			return
		}
		everySwitch = everySwitch || !byUUID
		for _, m := range op.Mutations {
			if m.Column == "ports" {
				eachUUID(m.Value, func(u string) { l.c.ports = addUUID(l.c.ports, u) })
			}
		}
	}
	if everySwitch {
		for _, u := range switches() {
			l.c.switches = addUUID(l.c.switches, u)
		}
	}
}

// onlyEmpty reports whether where holds only for a switch without ports.
func onlyEmpty(where []ovsdb.Condition) bool {
	for _, c := range where {
		if set, ok := c.Value.(ovsdb.OvsSet); ok && c.Column == "ports" && c.Function == ovsdb.ConditionEqual && len(set.GoSet) == 0 {
			return true
		}
	}
	return false
}

// eachUUID calls f with each real (not named) UUID v holds: a UUID or a
// set of them.
func eachUUID(v any, f func(string)) {
	switch v := v.(type) {
	case ovsdb.UUID:
		if ovsdb.IsValidUUID(v.GoUUID) {
			f(v.GoUUID)
		}
	case ovsdb.OvsSet:
		for _, e := range v.GoSet {
			eachUUID(e, f)
		}
	}
}

// setAll records that any row may have changed.
func (l *changeLog) setAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.c = changes{all: true}
}

// take returns what was recorded and starts afresh.
func (l *changeLog) take() changes {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.c
	l.c = changes{}
	return c
}
