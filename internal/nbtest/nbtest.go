package nbtest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
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
// A Server from Serve has no test: its methods that fail one (NBCtl, Get,
// Commits, Restart, Wipe, Backup, Restore) are for Start's servers.
type Server struct {
	Dir    string // the temporary directory holding the db, socket, log and control socket
	Sock   string // the unix socket path
	DBFile string
	ctl    string
	cmd    *exec.Cmd
	t      testing.TB // nil for Serve's
	// args are more ovsdb-server arguments, given at every start (StartSSL's
	// remote and PKI files).
	args []string
}

// Addr is the server's address in the form ovn-sync's --nb flag takes.
func (s *Server) Addr() string { return "unix:" + s.Sock }

// tools are the programs a Server runs: ovsdb-tool creates its database,
// ovsdb-server serves it, ovsdb-client waits for it to answer and takes
// backups. Tests also need ovn-nbctl.
var tools = []string{"ovsdb-server", "ovsdb-tool", "ovsdb-client"}

// Require skips t (or fails it under CI) when the OVN tools are missing.
func Require(t testing.TB) {
	t.Helper()
	if os.Getenv("OVN_SYNC_SKIP_INTEGRATION") != "" {
		t.Skip("OVN_SYNC_SKIP_INTEGRATION set")
	}
	if tool := missingTool(append([]string{"ovn-nbctl"}, tools...)); tool != "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s not found on PATH: install Debian's ovn-central", tool)
		}
		t.Skipf("%s not found on PATH: install Debian's ovn-central to run this test", tool)
	}
	if _, err := os.Stat(SchemaPath); err != nil {
		t.Fatalf("OVN NB schema: %v", err)
	}
}

// Available returns an error naming the first tool or file Serve needs that
// the machine lacks, nil when it has them all.
func Available() error {
	if tool := missingTool(tools); tool != "" {
		return fmt.Errorf("%s not found on PATH: install Debian's ovn-central", tool)
	}
	if _, err := os.Stat(SchemaPath); err != nil {
		return fmt.Errorf("OVN NB schema: %w", err)
	}
	return nil
}

// missingTool returns the first of names not on PATH, "" when none is.
func missingTool(names []string) string {
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			return n
		}
	}
	return ""
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
	s, err := serve(args)
	if err != nil {
		t.Fatal(err)
	}
	s.t = t
	t.Cleanup(s.Close)
	return s
}

// Serve creates a fresh NB database in a new temporary directory and
// serves it until Close: Start for a program that is not a test, such as
// the benchmark harness. Available says whether the machine can.
func Serve() (*Server, error) { return serve(nil) }

func serve(args []string) (*Server, error) {
	// Unix socket paths are limited to ~107 bytes; t.TempDir can be longer.
	dir, err := os.MkdirTemp("", "nbtest")
	if err != nil {
		return nil, err
	}
	s := &Server{Dir: dir, Sock: filepath.Join(dir, "nb.sock"), DBFile: filepath.Join(dir, "nb.db"), ctl: filepath.Join(dir, "nb.ctl"), args: args}
	if out, err := exec.Command("ovsdb-tool", "create", s.DBFile, SchemaPath).CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("ovsdb-tool create: %w: %s", err, out)
	}
	if err := s.run(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// start is run for a test's server: it fails the test.
func (s *Server) start() {
	s.t.Helper()
	if err := s.run(); err != nil {
		s.t.Fatal(err)
	}
}

// run starts ovsdb-server on the database and returns once it answers; if
// it does not, it is stopped again.
func (s *Server) run() error {
	s.cmd = exec.Command("ovsdb-server", s.DBFile, "--no-chdir",
		"--unixctl="+s.ctl, "--log-file="+filepath.Join(s.Dir, "nb.log"), "-vconsole:off",
		"--remote=punix:"+s.Sock)
	s.cmd.Args = append(s.cmd.Args, s.args...)
	// A process killed before it stops its servers takes them along.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		s.cmd = nil
		return fmt.Errorf("ovsdb-server: %w", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(s.Sock); err == nil {
			out, err := exec.Command("ovsdb-client", "--timeout=5", "wait", "unix:"+s.Sock, "OVN_Northbound", "connected").CombinedOutput()
			if err == nil {
				return nil
			}
			if time.Now().After(deadline) {
				s.Stop()
				return fmt.Errorf("ovsdb-server not ready: %w: %s", err, out)
			}
		}
		if time.Now().After(deadline) {
			s.Stop()
			return fmt.Errorf("ovsdb-server did not create %s", s.Sock)
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

// Close stops the server and removes its directory: the end of a Server
// from Serve (Start's close when the test ends).
func (s *Server) Close() {
	s.Stop()
	os.RemoveAll(s.Dir)
}

// Pid is the running ovsdb-server's process ID, 0 while it is stopped: the
// benchmark harness reads its CPU time.
func (s *Server) Pid() int {
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
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
// ovsdb-server appends one record per committed transaction (the first
// record is the schema), so the difference between two calls counts the
// transactions committed in between. A compaction in between would make it
// shrink; the server compacts no sooner than 10 minutes after it starts.
func (s *Server) Commits() int {
	s.t.Helper()
	n, err := s.TryCommits()
	if err != nil {
		s.t.Fatal(err)
	}
	return n
}

// TryCommits is Commits returning the error instead of failing the test.
func (s *Server) TryCommits() (int, error) {
	f, err := os.Open(s.DBFile)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<16)
	n := 0
	for {
		header, err := r.ReadString('\n')
		if err == io.EOF && header == "" {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("%s: record %d: %w", s.DBFile, n+1, err)
		}
		// "OVSDB JSON <length> <sha1>\n" then <length> bytes of JSON.
		var length int64
		var sum string
		if _, err := fmt.Sscanf(header, "OVSDB JSON %d %s", &length, &sum); err != nil {
			return n, fmt.Errorf("%s: record %d: header %q: %w", s.DBFile, n+1, strings.TrimSpace(header), err)
		}
		if _, err := r.Discard(int(length)); err != nil {
			return n, fmt.Errorf("%s: record %d: %w", s.DBFile, n+1, err)
		}
		n++
	}
}
