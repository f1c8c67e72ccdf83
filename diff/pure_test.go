package diff

import (
	"testing"

	"github.com/ovn-sync/ovn-sync/internal/puretest"
)

// TestPure keeps diff pure: the standard library and state, nothing else.
func TestPure(t *testing.T) { puretest.Check(t, "github.com/ovn-sync/ovn-sync/state") }
