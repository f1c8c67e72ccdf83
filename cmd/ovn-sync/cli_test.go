package main

import (
	"bytes"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const stdinPod = `apiVersion: v1
kind: Pod
metadata: {name: from-stdin, namespace: default}
spec: {nodeName: node-1, containers: [{name: c, image: busybox}]}
`

// cli runs the command line in-process with in as standard input.
func cli(t *testing.T, in string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	old := stdin
	stdin = strings.NewReader(in)
	defer func() { stdin = old }()
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return o.String(), e.String(), code
}

// TestFlagsThatDoNothingAreRefused: every flag a command registers but does
// not use is an error naming it and the command, not silently ignored.
func TestFlagsThatDoNothingAreRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"apply", "-f", "-", "--nb", "embedded", "--detailed-exitcode"}, "--detailed-exitcode does nothing for apply"},
		{[]string{"plan", "-f", "-", "--nb", "embedded", "--max-ops-per-txn", "10"}, "--max-ops-per-txn does nothing for plan"},
		{[]string{"plan", "-f", "-", "--nb", "embedded", "--txns-in-flight", "1"}, "--txns-in-flight does nothing for plan"},
		{[]string{"plan", "-f", "-", "--nb", "embedded", "--allow-mass-delete"}, "--allow-mass-delete does nothing for plan"},
		{[]string{"plan", "-f", "-", "--nb", "embedded", "--max-delete-fraction", "0.9"}, "--max-delete-fraction does nothing for plan"},
		{[]string{"explain", "pod/default/x", "-f", "-", "--nb", "embedded", "--allow-mass-delete"}, "--allow-mass-delete does nothing for explain"},
		{[]string{"plan", "-f", "-", "--nb", "embedded", "--nb-ca", "ca.pem"}, "are for ssl: endpoints"},
		{[]string{"run", "--nb", "unix:/nonexistent", "--nb-cert", "c.pem", "--nb-key", "k.pem"}, "are for ssl: endpoints"},
		{[]string{"run", "--nb", "unix:/nonexistent", "--dry-run", "--publish"}, "--publish does nothing with --dry-run"},
		{[]string{"run", "--nb", "unix:/nonexistent", "--dry-run", "--leader-elect"}, "--leader-elect does nothing with --dry-run"},
		{[]string{"run", "--nb", "unix:/nonexistent", "--dry-run", "--max-ops-per-txn", "5"}, "--max-ops-per-txn does nothing with --dry-run"},
		{[]string{"demo", "extra"}, "unexpected arguments"},
		{[]string{"version", "--short"}, "takes no arguments or flags"},
	} {
		_, stderr, code := cli(t, stdinPod, tc.args...)
		if code != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("ovn-sync %s: exit %d, stderr %q; want 1 and %q", strings.Join(tc.args, " "), code, stderr, tc.want)
		}
	}
	// -h lists the flags a command takes, not those it refuses.
	_, stderr, code := cli(t, "", "apply", "-h")
	if code != 0 || !strings.Contains(stderr, "-allow-mass-delete") || strings.Contains(stderr, "detailed-exitcode") {
		t.Errorf("apply -h: exit %d, want 0 and a flag list with --allow-mass-delete and no --detailed-exitcode:\n%s", code, stderr)
	}
}

// TestManifestsFromStdin: -f - reads standard input for plan, apply and
// explain, and apply on an embedded NB says that nothing persists.
func TestManifestsFromStdin(t *testing.T) {
	stdout, stderr, code := cli(t, stdinPod, "plan", "-f", "-", "--nb", "embedded", "--detailed-exitcode")
	if code != 2 || !strings.Contains(stdout, `"from-stdin.default" (Pod/default/from-stdin)`) {
		t.Errorf("plan -f -: exit %d, want 2 and the pod's port\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	stdout, stderr, code = cli(t, stdinPod, "apply", "-f", "-", "--nb", "embedded")
	if code != 0 || !strings.Contains(stdout, "from-stdin.default") || !strings.Contains(stderr, "nothing will persist") {
		t.Errorf("apply -f - --nb embedded: exit %d, want 0, the port, and a note that nothing persists\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	stdout, stderr, code = cli(t, stdinPod, "explain", "pod/default/from-stdin", "-f", "-", "--nb", "embedded")
	if code != 0 || !strings.Contains(stdout, "from-stdin.default") {
		t.Errorf("explain -f -: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if _, stderr, code := cli(t, stdinPod, "plan", "-f", "-", "-f", "-", "--nb", "embedded"); code != 1 || !strings.Contains(stderr, "read once") {
		t.Errorf("plan -f - -f -: exit %d, stderr %q; want an error", code, stderr)
	}
	if _, stderr, _ := cli(t, stdinPod, "plan", "-f", "-", "--nb", "embedded"); strings.Contains(stderr, "persist") {
		t.Errorf("plan --nb embedded warned about persistence (it writes nothing anyway): %q", stderr)
	}
}

// TestManifestErrorsWinOverTheNB: the NB is connected while the manifests
// are read, but a manifest error or an empty input is still what is
// reported, and the pending connection is given up at once, even to an NB
// that accepts and never answers.
func TestManifestErrorsWinOverTheNB(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "mute.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close() // accepted, never answered
		}
	}()
	for _, tc := range []struct{ in, want string }{
		{"kind: Pod\napiVersion: v1\nmetadata: {name: [\n", "-: document 0: "},
		{"", "no Kubernetes objects read from -"},
		{"# nothing\n", "no Kubernetes objects read from -"},
	} {
		done := make(chan struct{})
		var stderr string
		var code int
		go func() {
			defer close(done)
			_, stderr, code = cli(t, tc.in, "apply", "-f", "-", "--nb", "unix:"+sock, "--connect-timeout", "10m")
		}()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("apply -f - with %q: still waiting on the NB after 20s", tc.in)
		}
		if code != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("apply -f - with %q: exit %d, stderr %q; want 1 and %q", tc.in, code, stderr, tc.want)
		}
	}
}

// TestDryRunDefaults: a dry run takes no Lease and publishes nothing, and
// emits Events only when --events is given.
func TestDryRunDefaults(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		events bool
	}{
		{[]string{"--nb", "unix:/x", "--dry-run"}, false},
		{[]string{"--nb", "unix:/x", "--dry-run", "--events"}, true},
		{[]string{"--nb", "unix:/x", "--dry-run", "--events=false"}, false},
	} {
		rf := newRunFlags(io.Discard)
		if err := rf.parse(tc.args); err != nil {
			t.Fatalf("run %v: %v", tc.args, err)
		}
		if rf.leaderElect || rf.publish || rf.events != tc.events {
			t.Errorf("run %v: leader-elect %v, publish %v, events %v; want false, false, %v", tc.args, rf.leaderElect, rf.publish, rf.events, tc.events)
		}
	}
}
