package dataplane

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Where Debian's ovn-central, ovn-host and openvswitch-switch install the
// schemas.
const (
	nbSchema      = "/usr/share/ovn/ovn-nb.ovsschema"
	sbSchema      = "/usr/share/ovn/ovn-sb.ovsschema"
	vswitchSchema = "/usr/share/openvswitch/vswitch.ovsschema"
)

// Wait is how long any one wait lasts before the test fails: generous, for
// a busy two-core machine. Waits poll every PollInterval.
const (
	Wait         = 60 * time.Second
	PollInterval = 50 * time.Millisecond
)

// tools are the programs Start needs.
var tools = []string{"ip", "ping", "ovsdb-server", "ovsdb-tool", "ovn-northd", "ovn-nbctl", "ovn-sbctl",
	"ovs-vswitchd", "ovs-vsctl", "ovs-appctl", "ovn-controller"}

// Env is a running OVN: NB, SB, northd, and the chassis added to it.
type Env struct {
	t testing.TB
	// Dir holds every database, socket, pidfile and log; short, for unix
	// socket paths.
	Dir string
	// Tag prefixes every namespace name: "ovsdp<pid>".
	Tag string
	// NB and SB are the databases' addresses ("unix:PATH").
	NB, SB string

	daemons []*daemon
	netns   []string
	chassis []*Chassis
}

// daemon is a process the Env started, with its log.
type daemon struct {
	name string
	cmd  *exec.Cmd
	log  string
	// stop, when set, asks the daemon to exit before it is killed.
	stop func()
	done chan struct{}
}

// Require skips t when the data plane cannot run here: not root, no
// network namespaces, or a program missing. Under CI (CI set) a missing
// program fails t instead.
func Require(t testing.TB) {
	t.Helper()
	if os.Getenv("OVN_SYNC_SKIP_INTEGRATION") != "" {
		t.Skip("OVN_SYNC_SKIP_INTEGRATION set")
	}
	if os.Geteuid() != 0 {
		t.Skip("the data plane needs root: network namespaces, veths and ovs-vswitchd")
	}
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s not found on PATH: install Debian's ovn-central, ovn-host, openvswitch-switch and iputils-ping", tool)
			}
			t.Skipf("%s not found on PATH: install Debian's ovn-central, ovn-host, openvswitch-switch and iputils-ping to run the data-plane test", tool)
		}
	}
	for _, f := range []string{nbSchema, sbSchema, vswitchSchema} {
		if _, err := os.Stat(f); err != nil {
			t.Skipf("schema: %v", err)
		}
	}
	probe := fmt.Sprintf("ovsdp%d-probe", os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", probe).CombinedOutput(); err != nil {
		t.Skipf("cannot create a network namespace here: %v: %s", err, bytes.TrimSpace(out))
	}
	_ = exec.Command("ip", "netns", "delete", probe).Run()
}

// Start runs NB, SB and ovn-northd until the test ends.
func Start(t testing.TB) *Env {
	t.Helper()
	Require(t)
	removeStale()
	dir, err := os.MkdirTemp("", "ovsdp")
	if err != nil {
		t.Fatal(err)
	}
	e := &Env{t: t, Dir: dir, Tag: fmt.Sprintf("ovsdp%d", os.Getpid())}
	// Cleanups run last-in first-out: the directory goes after every
	// process and namespace.
	t.Cleanup(func() {
		if t.Failed() {
			e.dumpLogs()
		}
		if os.Getenv("OVN_SYNC_KEEP_DATAPLANE") == "" {
			os.RemoveAll(dir)
		} else {
			t.Logf("data plane files kept in %s", dir)
		}
	})
	t.Cleanup(e.stopAll)
	e.NB = e.startDB("nb", nbSchema)
	e.SB = e.startDB("sb", sbSchema)
	e.run(&daemon{name: "ovn-northd", log: e.path("northd.log")}, nil, "ovn-northd",
		"--ovnnb-db="+e.NB, "--ovnsb-db="+e.SB, "--no-chdir", "-vconsole:off",
		"--unixctl="+e.path("northd.ctl"), "--log-file="+e.path("northd.log"))
	return e
}

func (e *Env) path(name string) string { return filepath.Join(e.Dir, name) }

// startDB creates a database from schema and serves it on a unix socket.
func (e *Env) startDB(name, schema string) string {
	e.t.Helper()
	db := e.path(name + ".db")
	if out, err := exec.Command("ovsdb-tool", "create", db, schema).CombinedOutput(); err != nil {
		e.t.Fatalf("ovsdb-tool create %s: %v: %s", db, err, out)
	}
	sock := e.path(name + ".sock")
	e.run(&daemon{name: name + " ovsdb-server", log: e.path(name + ".log")}, nil, "ovsdb-server", db, "--no-chdir", "-vconsole:off",
		"--unixctl="+e.path(name+".ctl"), "--log-file="+e.path(name+".log"), "--remote=punix:"+sock)
	e.waitFor("ovsdb-server "+sock, func() error {
		_, err := os.Stat(sock)
		return err
	})
	return "unix:" + sock
}

// run starts a daemon in the foreground. A test binary killed before its
// cleanups run takes its daemons along (Pdeathsig); ip netns exec execs the
// daemon, which keeps it.
func (e *Env) run(d *daemon, env []string, prog string, args ...string) {
	e.t.Helper()
	d.cmd = exec.Command(prog, args...)
	d.cmd.Env = append(os.Environ(), env...)
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var stderr bytes.Buffer
	d.cmd.Stderr = &stderr
	if err := d.cmd.Start(); err != nil {
		e.t.Fatalf("%s: %v", d.name, err)
	}
	d.done = make(chan struct{})
	go func() { _ = d.cmd.Wait(); close(d.done) }()
	e.daemons = append(e.daemons, d)
	select {
	case <-d.done:
		e.t.Fatalf("%s exited at once: %s", d.name, stderr.String())
	case <-time.After(20 * time.Millisecond):
	}
}

// stopAll ends every daemon, newest first, and deletes every namespace.
func (e *Env) stopAll() {
	for i := len(e.daemons) - 1; i >= 0; i-- {
		d := e.daemons[i]
		select {
		case <-d.done:
			continue
		default:
		}
		if d.stop != nil {
			d.stop()
		}
		_ = d.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-d.done:
		case <-time.After(5 * time.Second):
			_ = d.cmd.Process.Kill()
			<-d.done
		}
	}
	for _, ns := range e.netns {
		if out, err := exec.Command("ip", "netns", "delete", ns).CombinedOutput(); err != nil {
			e.t.Logf("ip netns delete %s: %v: %s", ns, err, out)
		}
	}
}

// dumpLogs prints the tail of every daemon's log, for a failed test.
func (e *Env) dumpLogs() {
	for _, d := range e.daemons {
		b, err := os.ReadFile(d.log)
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) > 30 {
			lines = lines[len(lines)-30:]
		}
		e.t.Logf("--- %s (%s), last %d lines:\n%s", d.name, d.log, len(lines), strings.Join(lines, "\n"))
	}
}

var staleNS = regexp.MustCompile(`^ovsdp([0-9]+)-`)

// removeStale deletes the namespaces of earlier runs whose process is gone
// (a test binary killed before its cleanups ran).
func removeStale() {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(out), "\n") {
		name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		m := staleNS.FindStringSubmatch(name)
		if m == nil {
			continue
		}
		pid, _ := strconv.Atoi(m[1])
		if pid == os.Getpid() || syscall.Kill(pid, 0) == nil || !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			continue
		}
		_ = exec.Command("ip", "netns", "delete", name).Run()
	}
}

// AddNetns creates a network namespace named <Tag>-<name>, deleted when the
// test ends, with its loopback up.
func (e *Env) AddNetns(name string) string {
	e.t.Helper()
	ns := e.Tag + "-" + name
	_ = exec.Command("ip", "netns", "delete", ns).Run()
	e.Cmd("ip", "netns", "add", ns)
	e.netns = append(e.netns, ns)
	e.Cmd("ip", "-n", ns, "link", "set", "lo", "up")
	return ns
}

// Cmd runs a command and returns its trimmed output, failing the test on an
// error.
func (e *Env) Cmd(prog string, args ...string) string {
	e.t.Helper()
	out, err := e.TryCmd(prog, args...)
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

// TryCmd runs a command with a deadline and returns its trimmed output; the
// error holds the command and its output.
func (e *Env) TryCmd(prog string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), Wait)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s %s: %v: %s%s", prog, strings.Join(args, " "), err,
			bytes.TrimSpace(stderr.Bytes()), bytes.TrimSpace(stdout.Bytes()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

// NBCtl runs ovn-nbctl on the NB.
func (e *Env) NBCtl(args ...string) string {
	e.t.Helper()
	return e.Cmd("ovn-nbctl", append([]string{"--db=" + e.NB, "--timeout=60"}, args...)...)
}

// SBCtl runs ovn-sbctl on the SB.
func (e *Env) SBCtl(args ...string) string {
	e.t.Helper()
	return e.Cmd("ovn-sbctl", append([]string{"--db=" + e.SB, "--timeout=60"}, args...)...)
}

// SyncHV waits until northd and every chassis have caught up with the NB
// as it is now: a barrier after an NB change, before checking that some
// traffic is dropped.
func (e *Env) SyncHV() {
	e.t.Helper()
	e.NBCtl("--wait=hv", "sync")
}

// waitFor polls f until it returns nil, failing the test after Wait.
func (e *Env) waitFor(what string, f func() error) time.Duration {
	e.t.Helper()
	return WaitFor(e.t, what, f)
}

// WaitFor polls f every PollInterval until it returns nil, failing t after
// Wait; it returns how long that took.
func WaitFor(t testing.TB, what string, f func() error) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		err := f()
		if err == nil {
			return time.Since(start)
		}
		if time.Since(start) > Wait {
			t.Fatalf("%s: not within %s: %v", what, Wait, err)
		}
		time.Sleep(PollInterval)
	}
}

// benign are log lines at level WARN about this machine, not about any row:
// each with why it is not a problem.
var benign = []string{
	// OVN built with the representor plug provider, on a machine without
	// SmartNIC representors.
	"failed to initialize representor VIF plug provider class",
}

// Problems returns the lines of northd's and every ovn-controller's log at
// level WARN or above, but those in benign.
func (e *Env) Problems() []string {
	var out []string
	for _, d := range e.daemons {
		if d.name != "ovn-northd" && !strings.HasPrefix(d.name, "ovn-controller") {
			continue
		}
		f, err := os.Open(d.log)
		if err != nil {
			out = append(out, fmt.Sprintf("%s: %v", d.name, err))
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			l := sc.Text()
			if slices.ContainsFunc(benign, func(b string) bool { return strings.Contains(l, b) }) {
				continue
			}
			if strings.Contains(l, "|WARN|") || strings.Contains(l, "|ERR|") || strings.Contains(l, "|EMER|") {
				out = append(out, d.name+": "+l)
			}
		}
		f.Close()
	}
	return out
}
