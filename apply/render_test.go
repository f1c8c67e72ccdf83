package apply

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ovn-org/libovsdb/ovsdb"
)

// render prints an operation compactly and deterministically, for tests:
//
//	insert Logical_Switch_Port as lsp0 {addresses=["a"] name="p"}
//	mutate Logical_Switch where _uuid==S: ports insert [lsp0 lsp1]
func render(op ovsdb.Operation) string {
	var b strings.Builder
	b.WriteString(op.Op + " " + op.Table)
	if op.UUIDName != "" {
		b.WriteString(" as " + op.UUIDName)
	}
	if len(op.Where) > 0 {
		conds := make([]string, len(op.Where))
		for i, c := range op.Where {
			fn := string(c.Function)
			if fn == string(ovsdb.ConditionIncludes) || fn == string(ovsdb.ConditionExcludes) {
				fn = " " + fn + " "
			}
			conds[i] = c.Column + fn + renderValue(c.Value)
		}
		b.WriteString(" where " + strings.Join(conds, " and "))
	}
	if op.Op == ovsdb.OperationWait {
		rows := make([]string, len(op.Rows))
		for i, r := range op.Rows {
			rows[i] = renderRow(r)
		}
		fmt.Fprintf(&b, " columns %s until %s [%s]", renderValue(op.Columns), op.Until, strings.Join(rows, " "))
		if op.Timeout != nil {
			fmt.Fprintf(&b, " timeout %d", *op.Timeout)
		}
	}
	if op.Row != nil {
		b.WriteString(" " + renderRow(op.Row))
	}
	if len(op.Mutations) > 0 {
		muts := make([]string, len(op.Mutations))
		for i, m := range op.Mutations {
			muts[i] = m.Column + " " + string(m.Mutator) + " " + renderValue(m.Value)
		}
		b.WriteString(": " + strings.Join(muts, ", "))
	}
	return b.String()
}

func renderRow(r ovsdb.Row) string {
	cols := make([]string, 0, len(r))
	for c := range r {
		cols = append(cols, c)
	}
	slices.Sort(cols)
	for i, c := range cols {
		cols[i] = c + "=" + renderValue(r[c])
	}
	return "{" + strings.Join(cols, " ") + "}"
}

func renderValue(v any) string {
	switch v := v.(type) {
	case string:
		return fmt.Sprintf("%q", v)
	case []string:
		return "[" + strings.Join(v, " ") + "]"
	case ovsdb.UUID:
		return v.GoUUID
	case ovsdb.OvsSet:
		e := make([]string, len(v.GoSet))
		for i, x := range v.GoSet {
			e[i] = renderValue(x)
		}
		return "[" + strings.Join(e, " ") + "]"
	case ovsdb.OvsMap:
		e := make([]string, 0, len(v.GoMap))
		for k, x := range v.GoMap {
			e = append(e, renderValue(k)+"="+renderValue(x))
		}
		slices.Sort(e)
		return "{" + strings.Join(e, " ") + "}"
	}
	return fmt.Sprintf("%v", v)
}

// renderTxns prints transactions one operation a line, each transaction
// headed by its number.
func renderTxns(txns []txn) string {
	var b strings.Builder
	for i, t := range txns {
		fmt.Fprintf(&b, "txn %d\n", i)
		for _, op := range t.ops {
			b.WriteString("  " + render(op) + "\n")
		}
	}
	return b.String()
}
