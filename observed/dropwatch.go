package observed

import "github.com/go-logr/logr"

// dropMessage is what libovsdb v0.7's cache logs when it drops an event.
const dropMessage = "dropping event because event buffer is full"

// dropWatch is a logr sink that calls onDrop when libovsdb logs that it
// dropped a cache event, and passes everything on to inner (nil discards).
type dropWatch struct {
	inner  logr.LogSink
	onDrop func()
}

func (d *dropWatch) Init(info logr.RuntimeInfo) {
	if d.inner != nil {
		info.CallDepth++ // for the frame of dropWatch.Info
		d.inner.Init(info)
	}
}

// Enabled is true at level 0, where libovsdb logs a drop.
func (d *dropWatch) Enabled(level int) bool {
	return level == 0 || d.inner != nil && d.inner.Enabled(level)
}

func (d *dropWatch) Info(level int, msg string, kv ...any) {
	if msg == dropMessage {
		d.onDrop()
	}
	if d.inner != nil && d.inner.Enabled(level) {
		d.inner.Info(level, msg, kv...)
	}
}

func (d *dropWatch) Error(err error, msg string, kv ...any) {
	if d.inner != nil {
		d.inner.Error(err, msg, kv...)
	}
}

func (d *dropWatch) WithValues(kv ...any) logr.LogSink {
	if d.inner == nil {
		return d
	}
	return &dropWatch{inner: d.inner.WithValues(kv...), onDrop: d.onDrop}
}

func (d *dropWatch) WithName(name string) logr.LogSink {
	if d.inner == nil {
		return d
	}
	return &dropWatch{inner: d.inner.WithName(name), onDrop: d.onDrop}
}
