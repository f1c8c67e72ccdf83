package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// schemaPath is where Debian's ovn-central installs the NB schema.
const schemaPath = "/usr/share/ovn/ovn-nb.ovsschema"

// clockTick is the unit of utime and stime in /proc/<pid>/stat: USER_HZ,
// which Linux fixes at 100 for every user-visible interface.
const clockTick = 10 * time.Millisecond

// server is a standalone ovsdb-server serving one fresh OVN_Northbound
// database on a unix socket in its own temporary directory.
type server struct {
	dir    string
	sock   string
	dbFile string
	cmd    *exec.Cmd
}

// requireTools returns an error naming the first OVN tool or file missing.
func requireTools() error {
	for _, tool := range []string{"ovsdb-server", "ovsdb-tool"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s not found on PATH: install Debian's ovn-central", tool)
		}
	}
	if _, err := os.Stat(schemaPath); err != nil {
		return fmt.Errorf("OVN NB schema: %w", err)
	}
	return nil
}

// startServer creates an empty NB database with ovsdb-tool and serves it,
// returning once the socket accepts connections. Call stop when done.
func startServer(ctx context.Context) (*server, error) {
	// Unix socket paths are limited to ~107 bytes: keep the directory short.
	dir, err := os.MkdirTemp("", "ovn-sync-bench")
	if err != nil {
		return nil, err
	}
	s := &server{dir: dir, sock: filepath.Join(dir, "nb.sock"), dbFile: filepath.Join(dir, "nb.db")}
	if out, err := exec.CommandContext(ctx, "ovsdb-tool", "create", s.dbFile, schemaPath).CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("ovsdb-tool create: %w: %s", err, out)
	}
	s.cmd = exec.Command("ovsdb-server", s.dbFile, "--no-chdir",
		"--unixctl="+filepath.Join(dir, "nb.ctl"), "--log-file="+filepath.Join(dir, "nb.log"),
		"-vconsole:off", "--remote=punix:"+s.sock)
	if err := s.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("ovsdb-server: %w", err)
	}
	if err := s.waitReady(ctx, 10*time.Second); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

// waitReady polls the socket until it accepts a connection.
func (s *server) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.Dial("unix", s.sock)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("ovsdb-server did not listen on %s within %s: %w", s.sock, timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// endpoint is the server's address as observed.Options takes it.
func (s *server) endpoint() string { return "unix:" + s.sock }

// stop terminates the server and removes its directory.
func (s *server) stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = s.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = s.cmd.Process.Kill()
			<-done
		}
	}
	os.RemoveAll(s.dir)
}

// cpu returns the CPU time (user + system) the server has used so far.
func (s *server) cpu() (time.Duration, error) {
	return processCPU(s.cmd.Process.Pid)
}

// processCPU reads utime + stime of a process from /proc/<pid>/stat.
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces;
	// the fields after it start with field 3, the state.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	const utime, stime = 14 - 3, 15 - 3
	if len(f) <= stime {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	u, err1 := strconv.ParseInt(f[utime], 10, 64)
	k, err2 := strconv.ParseInt(f[stime], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return time.Duration(u+k) * clockTick, nil
}

// commits returns the number of records in the database file. A standalone
// ovsdb-server appends one record per committed transaction (the first
// record is the schema), so the difference between two calls counts the
// transactions committed in between. A compaction in between would make it
// shrink; the server compacts no sooner than 10 minutes after it starts.
func (s *server) commits() (int, error) {
	f, err := os.Open(s.dbFile)
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
			return n, fmt.Errorf("%s: record %d: %w", s.dbFile, n+1, err)
		}
		// "OVSDB JSON <length> <sha1>\n" then <length> bytes of JSON.
		var length int64
		var sum string
		if _, err := fmt.Sscanf(header, "OVSDB JSON %d %s", &length, &sum); err != nil {
			return n, fmt.Errorf("%s: record %d: header %q: %w", s.dbFile, n+1, strings.TrimSpace(header), err)
		}
		if _, err := r.Discard(int(length)); err != nil {
			return n, fmt.Errorf("%s: record %d: %w", s.dbFile, n+1, err)
		}
		n++
	}
}
