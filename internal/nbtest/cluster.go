package nbtest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// ClusterSize is the number of members StartCluster starts: the smallest
// cluster that keeps a majority when one member dies.
const ClusterSize = 3

// Cluster is a RAFT OVN_Northbound cluster of ClusterSize ovsdb-servers on
// loopback. Members talk RAFT over tcp:127.0.0.1; clients use each member's
// unix socket.
type Cluster struct {
	// Members are the servers, in the order Addr lists them. A member's
	// Stop kills it (SIGKILL); Restart brings it back on its database file,
	// from which it rejoins the cluster.
	Members []*Server
	// Raft are the members' RAFT addresses (tcp:127.0.0.1:PORT).
	Raft []string
	t    testing.TB
}

// StartCluster creates a cluster of ClusterSize members and serves it until
// the test ends. It returns once every member has joined.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	Require(t)
	root, err := os.MkdirTemp("", "nbc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	c := &Cluster{t: t, Raft: freeRaftAddrs(t, ClusterSize)}
	for i := range ClusterSize {
		dir := filepath.Join(root, fmt.Sprint(i))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		s := &Server{Dir: dir, Sock: filepath.Join(dir, "nb.sock"), DBFile: filepath.Join(dir, "nb.db"), ctl: filepath.Join(dir, "nb.ctl"), t: t}
		// The first member creates the cluster; each later one joins
		// through the members before it.
		args := []string{"create-cluster", s.DBFile, SchemaPath, c.Raft[0]}
		if i > 0 {
			args = append([]string{"join-cluster", s.DBFile, "OVN_Northbound", c.Raft[i]}, c.Raft[:i]...)
		}
		if out, err := exec.Command("ovsdb-tool", args...).CombinedOutput(); err != nil {
			t.Fatalf("ovsdb-tool %s: %v: %s", args[0], err, out)
		}
		c.Members = append(c.Members, s)
	}
	// A joining member is "connected" only once the cluster has admitted it,
	// so each start waits for the members before it to have a leader.
	for _, s := range c.Members {
		s.start()
		t.Cleanup(s.Stop)
	}
	c.Leader()
	return c
}

// freeRaftAddrs picks n free loopback ports. They are held open together so
// that they differ, and released just before ovsdb-server binds them.
func freeRaftAddrs(t testing.TB, n int) []string {
	t.Helper()
	var addrs []string
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		addrs = append(addrs, "tcp:"+l.Addr().String())
	}
	return addrs
}

// Addr lists every member's endpoint, comma-separated, as ovn-sync's --nb
// flag takes them for a cluster.
func (c *Cluster) Addr() string {
	eps := make([]string, len(c.Members))
	for i, s := range c.Members {
		eps[i] = s.Addr()
	}
	return strings.Join(eps, ",")
}

// Running reports whether member i has a running ovsdb-server.
func (c *Cluster) Running(i int) bool { return c.Members[i].cmd != nil }

// Role is member i's RAFT role ("leader", "follower", "candidate"), as its
// cluster/status reports it.
func (c *Cluster) Role(i int) (string, error) {
	s := c.Members[i]
	cmd := exec.Command("ovs-appctl", "-t", s.ctl, "--timeout=5", "cluster/status", "OVN_Northbound")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("member %d cluster/status: %w: %s", i, err, strings.TrimSpace(stderr.String()))
	}
	for line := range strings.Lines(string(out)) {
		if role, ok := strings.CutPrefix(line, "Role: "); ok {
			return strings.TrimSpace(role), nil
		}
	}
	return "", fmt.Errorf("member %d cluster/status has no Role line:\n%s", i, out)
}

// Leader waits (up to 15s) until a running member is leader and returns its
// index.
func (c *Cluster) Leader() int {
	c.t.Helper()
	i, err := c.waitLeader(15 * time.Second)
	if err != nil {
		c.t.Fatal(err)
	}
	return i
}

func (c *Cluster) waitLeader(timeout time.Duration) (int, error) {
	deadline := time.Now().Add(timeout)
	var errs []string
	for {
		errs = errs[:0]
		for i := range c.Members {
			if !c.Running(i) {
				continue
			}
			role, err := c.Role(i)
			if err != nil {
				errs = append(errs, err.Error())
			} else if role == "leader" {
				return i, nil
			}
		}
		if time.Now().After(deadline) {
			return -1, fmt.Errorf("no NB cluster leader within %s: %s", timeout, strings.Join(errs, "; "))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// KillLeader kills the leader's ovsdb-server with SIGKILL and returns its
// index. The others elect a new leader after the election timeout (1s).
func (c *Cluster) KillLeader() int {
	c.t.Helper()
	i := c.Leader()
	c.Members[i].Stop()
	return i
}

// Restart starts member i again if it is not running, and waits until it
// has rejoined.
func (c *Cluster) Restart(i int) {
	c.t.Helper()
	if !c.Running(i) {
		c.Members[i].start()
	}
}

// NBCtl runs ovn-nbctl against the cluster's leader and returns its trimmed
// output.
func (c *Cluster) NBCtl(args ...string) string {
	c.t.Helper()
	out, err := c.TryNBCtl(args...)
	if err != nil {
		c.t.Fatalf("ovn-nbctl %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// TryNBCtl is NBCtl returning the error instead of failing the test. It
// waits for a leader first: ovn-nbctl gives up at once when none of its
// remotes is one, as happens during an election.
func (c *Cluster) TryNBCtl(args ...string) (string, error) {
	i, err := c.waitLeader(15 * time.Second)
	if err != nil {
		return "", err
	}
	return nbctl(c.Members[i].Addr(), 20*time.Second, args)
}
