package reconcile

import (
	"context"
	"strings"
	"time"

	"github.com/ovn-sync/ovn-sync/state"
)

// trigger is why a pass runs; several coalesce into one pass.
type trigger uint8

const (
	trigStartup   trigger = 1 << iota // first pass after the caches synced (or the lease was won)
	trigKube                          // an informer event
	trigDrift                         // someone else changed one of our NB rows
	trigReconnect                     // the NB connection came back
	trigResync                        // Resync elapsed
	trigNB                            // a row changed in the NB (a dry run)
)

// kind is "full" for a pass that nothing in particular triggered (startup,
// reconnect, resync), else "change".
func (t trigger) kind() string {
	if t&(trigStartup|trigReconnect|trigResync) != 0 {
		return "full"
	}
	return "change"
}

func (t trigger) String() string {
	var parts []string
	for _, x := range []struct {
		t trigger
		s string
	}{{trigStartup, "startup"}, {trigKube, "kubernetes"}, {trigDrift, "nb-drift"}, {trigReconnect, "reconnect"}, {trigResync, "resync"}, {trigNB, "nb"}} {
		if t&x.t != 0 {
			parts = append(parts, x.s)
		}
	}
	return strings.Join(parts, "+")
}

func notify(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// ask asks for a pass of trigger t: what the NB's drift, its reconnection
// and the resync ticker make. Kubernetes changes come on the
// source's own channel (Sources.Changes), which poll reads as trigKube.
func (l *Loop) ask(t trigger) {
	l.asked.Or(uint32(t))
	notify(l.wake)
}

// poll returns the triggers that came, without waiting.
func (l *Loop) poll() trigger {
	var t trigger
	select {
	case <-l.src.Changes():
		t = trigKube
	default:
	}
	select {
	case <-l.wake:
	default:
	}
	return t | trigger(l.asked.Swap(0))
}

// next returns the triggers that came; when none has, it waits until one
// comes, until fires (fired is then set; a nil until never does), or the
// loop ends (ctx done, stop closed), and returns none.
func (l *Loop) next(ctx context.Context, stop <-chan struct{}, until <-chan time.Time) (t trigger, fired bool) {
	if t = l.poll(); t != 0 {
		return t, false
	}
	select {
	case <-ctx.Done():
	case <-stop:
	case <-until:
		return 0, true
	case <-l.src.Changes():
		t = trigKube
	case <-l.wake:
	}
	return t | l.poll(), false
}

// tick asks for a resync every d until ctx is done.
func (l *Loop) tick(ctx context.Context, d time.Duration) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			l.ask(trigResync)
		}
	}
}

// BurstChanges is how many changed objects make a pass's reading a burst:
// if more come while it runs, the next pass starts LoopOptions.Coalesce
// after it started, not at once.
const BurstChanges = 64

// noteRead records how many changed objects the pass read (every one when
// the source could not tell which).
func (l *Loop) noteRead(changed []state.ObjectRef, all bool) {
	l.lastRead = len(changed)
	if all {
		l.lastRead = BurstChanges
	}
}

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// retryDelay is the pause after the n-th failed pass in a row: 200ms
// doubling, at most 30s and at most the resync period.
func retryDelay(n int, resync time.Duration) time.Duration {
	d := 200 * time.Millisecond << min(n-1, 8)
	return min(d, 30*time.Second, resync)
}

// coalesce returns the triggers that came: those already waiting, and when
// d is positive those that come within d, so that a burst of events makes
// one pass.
func (l *Loop) coalesce(ctx context.Context, stop <-chan struct{}, d time.Duration) trigger {
	t := l.poll()
	if d <= 0 {
		return t
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		u, fired := l.next(ctx, stop, timer.C)
		t |= u
		if fired || ctx.Err() != nil || closed(stop) {
			return t
		}
	}
}
