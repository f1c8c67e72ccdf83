package desired

import (
	"slices"

	"github.com/ovn-sync/ovn-sync/state"
)

// Versions name the inputs of one Build for a Memo. They are the caller's
// counters: Inputs must change whenever any object in Inputs may have
// changed (an informer event, say), and Have whenever the NB snapshot may
// have changed. A version read before the objects it covers is safe; one
// read after them is not, as a change in between would be missed.
type Versions struct {
	Inputs uint64
	Have   uint64
}

// Memo remembers the last Build. A periodic full pass over a cluster where
// nothing changed then costs nothing to build: the desired state is a
// function of the inputs, the config and the NB, and none of them changed.
// The pass still diffs that state against the whole NB, so drift is found
// as before (and drift changes the NB's version, which rebuilds).
//
// The zero Memo is empty. A Memo is not safe for concurrent use.
type Memo struct {
	valid    bool
	versions Versions
	cfg      Config
	result   Result
}

// Build returns Build(in, cfg, have), reusing the previous result when v and
// cfg are those of the previous call. in and have must be what v says.
func (m *Memo) Build(in Inputs, cfg Config, have state.State, v Versions) Result {
	if m.Hit(cfg, v) {
		return m.result
	}
	r := Build(in, cfg, have)
	*m = Memo{valid: true, versions: v, cfg: cfg, result: r}
	return r
}

// Hit reports whether Build with cfg and v would return the remembered result.
func (m *Memo) Hit(cfg Config, v Versions) bool {
	return m.valid && m.versions == v && cfg.equal(m.cfg)
}

// Reset forgets the remembered result.
func (m *Memo) Reset() { *m = Memo{} }

func (c Config) equal(o Config) bool {
	return c.DefaultSwitch == o.DefaultSwitch &&
		slices.Equal(c.DefaultSubnets, o.DefaultSubnets) &&
		slices.Equal(c.DefaultExclude, o.DefaultExclude) &&
		slices.Equal(c.DefaultGateway, o.DefaultGateway)
}
