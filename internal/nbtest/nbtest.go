package nbtest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// SchemaPath is where Debian's ovn-central installs the NB schema.
const SchemaPath = "/usr/share/ovn/ovn-nb.ovsschema"

// Server is a running ovsdb-server holding one OVN_Northbound database.
type Server struct {
	Dir    string // the temporary directory holding the db, socket, log and control socket
	Sock   string // the unix socket path
	DBFile string
	ctl    string
	cmd    *exec.Cmd
	t      testing.TB
	// args are more ovsdb-server arguments, given at every start (StartSSL's
	// remote and PKI files).
	args []string
}

// Addr is the server's address in the form ovn-sync's --nb flag takes.
func (s *Server) Addr() string { return "unix:" + s.Sock }

// Require skips t (or fails it under CI) when the OVN tools are missing.
func Require(t testing.TB) {
	t.Helper()
	if os.Getenv("OVN_SYNC_SKIP_INTEGRATION") != "" {
		t.Skip("OVN_SYNC_SKIP_INTEGRATION set")
	}
	for _, tool := range []string{"ovsdb-server", "ovsdb-tool", "ovn-nbctl"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s not found on PATH: install Debian's ovn-central", tool)
			}
			t.Skipf("%s not found on PATH: install Debian's ovn-central to run this test", tool)
		}
	}
	if _, err := os.Stat(SchemaPath); err != nil {
		t.Fatalf("OVN NB schema: %v", err)
	}
}

// Start creates a fresh NB database and serves it until the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	return startWith(t, nil)
}

// startWith is Start with more ovsdb-server arguments.
func startWith(t testing.TB, args []string) *Server {
	t.Helper()
	Require(t)
	// Unix socket paths are limited to ~107 bytes; t.TempDir can be longer.
	dir, err := os.MkdirTemp("", "nbtest")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	s := &Server{Dir: dir, Sock: filepath.Join(dir, "nb.sock"), DBFile: filepath.Join(dir, "nb.db"), ctl: filepath.Join(dir, "nb.ctl"), t: t, args: args}
	if out, err := exec.Command("ovsdb-tool", "create", s.DBFile, SchemaPath).CombinedOutput(); err != nil {
		t.Fatalf("ovsdb-tool create: %v: %s", err, out)
	}
	s.start()
	t.Cleanup(s.Stop)
	return s
}

func (s *Server) start() {
	s.t.Helper()
	s.cmd = exec.Command("ovsdb-server", s.DBFile, "--no-chdir",
		"--unixctl="+s.ctl, "--log-file="+filepath.Join(s.Dir, "nb.log"), "-vconsole:off",
		"--remote=punix:"+s.Sock)
	s.cmd.Args = append(s.cmd.Args, s.args...)
	// A test binary killed before its cleanups run takes its servers along.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("ovsdb-server: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(s.Sock); err == nil {
			if out, err := exec.Command("ovsdb-client", "--timeout=5", "wait", "unix:"+s.Sock, "OVN_Northbound", "connected").CombinedOutput(); err == nil {
				return
			} else if time.Now().After(deadline) {
				s.t.Fatalf("ovsdb-server not ready: %v: %s", err, out)
			}
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("ovsdb-server did not create %s", s.Sock)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop ends the server; the database file stays until the test ends.
func (s *Server) Stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	_ = os.Remove(s.Sock)
	s.cmd = nil
}

// Restart stops the server and starts it again on the same database and socket.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	s.start()
}

// Wipe stops the server, replaces its database with a fresh empty one and
// starts it again on the same socket: the NB of a RAFT cluster rebuilt from
// nothing.
func (s *Server) Wipe() {
	s.t.Helper()
	s.Stop()
	if err := os.Remove(s.DBFile); err != nil {
		s.t.Fatal(err)
	}
	if out, err := exec.Command("ovsdb-tool", "create", s.DBFile, SchemaPath).CombinedOutput(); err != nil {
		s.t.Fatalf("ovsdb-tool create: %v: %s", err, out)
	}
	s.start()
}

// Backup takes a backup of the database as it is now, as an operator
// would (ovsdb-client backup): a standalone database file.
func (s *Server) Backup() []byte {
	s.t.Helper()
	out, err := exec.Command("ovsdb-client", "--timeout=10", "backup", s.Addr(), "OVN_Northbound").Output()
	if err != nil {
		s.t.Fatalf("ovsdb-client backup: %v", err)
	}
	return out
}

// Restore stops the server, puts a Backup in place of its database and
// starts it again on the same socket.
func (s *Server) Restore(backup []byte) {
	s.t.Helper()
	s.Stop()
	if err := os.WriteFile(s.DBFile, backup, 0o644); err != nil {
		s.t.Fatal(err)
	}
	s.start()
}

// NBCtl runs ovn-nbctl against the server and returns its trimmed output.
func (s *Server) NBCtl(args ...string) string {
	s.t.Helper()
	out, err := s.TryNBCtl(args...)
	if err != nil {
		s.t.Fatalf("ovn-nbctl %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// Get reads one column or key of a row with ovn-nbctl ("" when the row or
// key is absent), without the quotes ovn-nbctl puts around a string.
func (s *Server) Get(table, record, column string) string {
	s.t.Helper()
	return strings.Trim(s.NBCtl("--if-exists", "get", table, record, column), `"`)
}

// TryNBCtl is NBCtl returning the error instead of failing the test.
func (s *Server) TryNBCtl(args ...string) (string, error) {
	return nbctl(s.Addr(), 10*time.Second, args)
}

// nbctl runs ovn-nbctl against db and returns its trimmed output, or an
// error carrying its stderr.
func nbctl(db string, timeout time.Duration, args []string) (string, error) {
	cmd := exec.Command("ovn-nbctl", append([]string{"--db=" + db, fmt.Sprintf("--timeout=%d", int(timeout.Seconds()))}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

// Commits returns the number of records in the database file. A standalone
// ovsdb-server appends one record per committed transaction, so the
// difference between two calls counts the transactions committed in between.
func (s *Server) Commits() int {
	s.t.Helper()
	f, err := os.Open(s.DBFile)
	if err != nil {
		s.t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	for sc.Scan() {
		if bytes.HasPrefix(sc.Bytes(), []byte("OVSDB JSON ")) {
			n++
		}
	}
	if err := sc.Err(); err != nil {
		s.t.Fatal(err)
	}
	return n
}
