package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ovn-sync/ovn-sync/internal/kubetest"
	"github.com/ovn-sync/ovn-sync/internal/looptest"
	"github.com/ovn-sync/ovn-sync/internal/nbtest"
	"github.com/ovn-sync/ovn-sync/observed"
)

// runEnv is what run mode's end-to-end tests run "ovn-sync run" against: a
// real kube-apiserver and etcd, a real ovsdb-server, and the test's own
// client of that NB.
//
//	e := startEnv(t, envOptions{RBAC: deployRBAC, Namespaces: []string{"tenant"}})
//	run := e.run("--leader-elect=false")
//	run.waitReady()
//	createPod(t, e.k, pausePod("tenant", "web", "node-a"))
//	portIs(t, e.nb, "web.tenant", "created", present)
type runEnv struct {
	t   *testing.T
	k   *kubetest.Server
	nbs *nbtest.Server
	// nb is the test's own view of the NB, over its unix socket.
	nb *observed.NB
	// kubeconfig is whom processes authenticate as: the service account
	// kubetest.ServiceAccountUser under envOptions.RBAC, else the cluster
	// admin.
	kubeconfig string
	// nbFlags tell a process where the NB is, and over ssl how to
	// authenticate to it.
	nbFlags []string
}

// deployRBAC is the RBAC a deployment of ovn-sync applies.
const deployRBAC = "../../deploy/rbac.yaml"

// envOptions are what a runEnv differs in.
type envOptions struct {
	// Namespaces are created once the API server is up.
	Namespaces []string
	// RBAC is a file of RBAC manifests (deployRBAC, say) to apply, and
	// processes run as the service account they bind
	// (kubetest.ServiceAccountUser): the manifests must suffice. Without
	// it processes run as the cluster admin.
	RBAC string
	// WithoutCRDs starts the API server without the KubeVirt, Multus and
	// kube-ovn CRDs (kubetest.StartBare): a cluster where they come later,
	// or never.
	WithoutCRDs bool
	// CRDFiles are more CRDs to install, one a file.
	CRDFiles []string
	// SSL serves the NB over ssl only to clients with a certificate of
	// its CA (nbtest.StartSSL); processes are given one.
	SSL bool
}

// startEnv starts a runEnv until the test ends. It skips the test where the
// OVN tools or the API server's binaries cannot be had (fails it under
// CI).
func startEnv(t *testing.T, o envOptions) *runEnv {
	t.Helper()
	nbtest.Require(t)
	e := &runEnv{t: t}
	if o.WithoutCRDs {
		e.k = kubetest.StartBare(t)
	} else {
		e.k = kubetest.Start(t)
	}
	if len(o.CRDFiles) > 0 {
		e.k.InstallCRDFiles(o.CRDFiles...)
	}
	e.kubeconfig = e.k.Kubeconfig
	if o.RBAC != "" {
		e.k.ApplyFile(o.RBAC)
		e.kubeconfig = e.k.ServiceAccountKubeconfig
	}
	for _, ns := range o.Namespaces {
		e.k.Namespace(ns)
	}
	if o.SSL {
		s := nbtest.StartSSL(t)
		e.nbs, e.nbFlags = s.Server, sslFlags(s, s.ClientCert, s.ClientKey, s.CA.Cert)
	} else {
		e.nbs = nbtest.Start(t)
		e.nbFlags = []string{"--nb", e.nbs.Addr()}
	}
	e.nb = nbWatch(t, e.nbs.Addr())
	return e
}

// withFreshNB returns e for t with a fresh NB (not over ssl) and the test's
// client of it, on the same API server: for processes that run one after
// another, each from an empty NB.
func (e *runEnv) withFreshNB(t *testing.T) *runEnv {
	t.Helper()
	f := *e
	f.t, f.nbs = t, nbtest.Start(t)
	f.nbFlags = []string{"--nb", f.nbs.Addr()}
	f.nb = nbWatch(t, f.nbs.Addr())
	return &f
}

// createPod creates p in k, failing the test if k refuses it.
func createPod(t *testing.T, k *kubetest.Server, p *corev1.Pod) {
	t.Helper()
	if _, err := k.Kube.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// pausePod is a plain pod on node: no network of its own asked for.
func pausePod(ns, name, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "pause"}}},
	}
}

// runOptions are what an "ovn-sync run" process differs in.
type runOptions struct {
	// Flags come after those every process gets (the NB's, --kubeconfig,
	// --metrics-addr, --log-format json, --coalesce 10ms, -v 1, and how
	// passes build): a flag given again wins.
	Flags []string
	// Kubeconfig, when set, is used instead of the env's (a
	// kubetest.Proxy's, say).
	Kubeconfig string
	// Env is added to the environment the process inherits from the test
	// (GOMEMLIMIT=..., say).
	Env []string
	// OwnPasses leaves how passes build to Flags or the binary's default
	// (incremental, unchecked). Otherwise every incremental pass is
	// checked against a full Build, or with OVN_SYNC_FULL_PASSES set every
	// pass builds in full.
	OwnPasses bool
	// Binary, when set, is run instead of the one the tests built (one
	// built from an older commit, say).
	Binary string
	// Cgroup, when set, is a cgroup directory the process joins before
	// it starts (it is then run through sh, which joins and execs it).
	Cgroup string
}

// run starts "ovn-sync run" with flags: runWith with only flags.
func (e *runEnv) run(flags ...string) *runProc {
	e.t.Helper()
	return e.runWith(runOptions{Flags: flags})
}

// runWith starts "ovn-sync run" against e and returns once it answers
// /healthz. When the test ends the process is stopped (SIGTERM), and the
// test fails if an incremental pass differed from a full Build; a failed
// test logs the end of the process's log.
func (e *runEnv) runWith(o runOptions) *runProc {
	t := e.t
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	kubeconfig := e.kubeconfig
	if o.Kubeconfig != "" {
		kubeconfig = o.Kubeconfig
	}
	args := append([]string{"run"}, e.nbFlags...)
	args = append(args, "--kubeconfig", kubeconfig, "--metrics-addr", addr, "--log-format", "json", "--coalesce", "10ms", "-v", "1")
	switch {
	case o.OwnPasses:
	case looptest.FullPasses():
		args = append(args, "--full-passes")
	default:
		args = append(args, "--verify-incremental")
	}
	args = append(args, o.Flags...)
	logf, err := os.CreateTemp(t.TempDir(), "run-*.log")
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close() // the process has its own
	argv := append([]string{binary}, args...)
	if o.Binary != "" {
		argv[0] = o.Binary
	}
	if o.Cgroup != "" {
		argv = append([]string{"sh", "-c", `echo $$ > "$0" && exec "$@"`, filepath.Join(o.Cgroup, "cgroup.procs")}, argv...)
	}
	p := &runProc{t: t, child: startChild(t, argv, o.Env, logf, logf), logPath: logf.Name(), metrics: "http://" + addr}
	t.Cleanup(func() {
		if !p.exited() {
			if body, err := p.get("/metrics"); err == nil && sample(body, "ovn_sync_incremental_mismatches_total") > 0 {
				t.Errorf("incremental passes differed from a full Build (ovn_sync_incremental_mismatches_total > 0)")
			}
		}
		p.stop(syscall.SIGTERM)
		if t.Failed() {
			t.Logf("--- %s\n%s", strings.Join(args, " "), p.logTail(6000))
		}
	})
	looptest.WaitFor(t, 30*time.Second, "metrics endpoint", func() error {
		if p.exited() {
			return fmt.Errorf("exited: %s", p.logTail(3000))
		}
		_, err := p.get("/healthz")
		return err
	})
	return p
}

// child is an ovn-sync process a test started. It dies with the test
// binary, and is killed when the test ends if it still runs.
type child struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once it has exited
	exit int           // once done: its exit code, -1 if a signal ended it
}

// startChild starts the program and arguments argv, env added to the
// test's environment, writing to stdout and stderr.
func startChild(t *testing.T, argv, env []string, stdout, stderr io.Writer) *child {
	t.Helper()
	c := &child{cmd: exec.Command(argv[0], argv[1:]...), done: make(chan struct{})}
	c.cmd.Stdout, c.cmd.Stderr = stdout, stderr
	if len(env) > 0 {
		c.cmd.Env = append(os.Environ(), env...)
	}
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := c.cmd.Wait()
		if ee, ok := err.(*exec.ExitError); ok {
			c.exit = ee.ExitCode()
		} else if err != nil {
			c.exit = -2
		}
		close(c.done)
	}()
	t.Cleanup(func() { c.stop(syscall.SIGKILL) })
	return c
}

func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// stop signals the process and waits for it (10s, then SIGKILL).
func (c *child) stop(sig syscall.Signal) {
	if c.exited() {
		return
	}
	_ = c.cmd.Process.Signal(sig)
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}

// runProc is one "ovn-sync run" child process.
type runProc struct {
	*child
	t       *testing.T
	logPath string
	metrics string // http://127.0.0.1:PORT
}

// waitReady waits until the process answers /readyz.
func (p *runProc) waitReady() {
	p.t.Helper()
	looptest.WaitFor(p.t, 30*time.Second, "ready", func() error { _, err := p.get("/readyz"); return err })
}

func (p *runProc) logTail(n int) string {
	data, _ := os.ReadFile(p.logPath)
	if len(data) > n {
		data = data[len(data)-n:]
	}
	return string(data)
}

func (p *runProc) get(path string) (string, error) {
	resp, err := http.Get(p.metrics + path)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return string(body), fmt.Errorf("GET %s: %s: %s", path, resp.Status, body)
	}
	return string(body), nil
}

// metric sums every sample of the named metric whose labels contain all of
// labels (e.g. `action="create"`).
func (p *runProc) metric(name string, labels ...string) float64 {
	p.t.Helper()
	body, err := p.get("/metrics")
	if err != nil {
		p.t.Fatal(err)
	}
	return sample(body, name, labels...)
}

// sample sums the samples of the named metric in a /metrics body whose
// labels contain all of labels.
func sample(body, name string, labels ...string) float64 {
	var sum float64
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) || strings.HasPrefix(line, "#") {
			continue
		}
		rest := line[len(name):]
		if rest == "" || (rest[0] != ' ' && rest[0] != '{') {
			continue
		}
		ok := true
		for _, l := range labels {
			ok = ok && strings.Contains(rest, l)
		}
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err == nil {
			sum += v
		}
	}
	return sum
}

// nbWatch is a client of the test's own of the NB at addr, until the test
// ends.
func nbWatch(t *testing.T, addr string) *observed.NB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nb, err := observed.Dial(ctx, observed.Options{Endpoints: []string{addr}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nb.Close)
	return nb
}
