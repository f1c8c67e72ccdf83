package reconcile

import (
	"testing"
	"time"
)

func TestTriggerKind(t *testing.T) {
	for tr, want := range map[trigger]string{
		trigStartup: "full", trigKube: "change", trigDrift: "change", trigKube | trigResync: "full", trigReconnect: "full",
	} {
		if got := tr.kind(); got != want {
			t.Errorf("(%s).kind() = %s, want %s", tr, got, want)
		}
	}
	if got := retryDelay(1, time.Minute); got != 200*time.Millisecond {
		t.Errorf("retryDelay(1) = %s", got)
	}
	if got := retryDelay(20, time.Minute); got != 30*time.Second {
		t.Errorf("retryDelay(20) = %s", got)
	}
	if got := retryDelay(20, 5*time.Second); got != 5*time.Second {
		t.Errorf("retryDelay(20, resync 5s) = %s", got)
	}
}
