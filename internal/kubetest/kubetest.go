package kubetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"embed"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ovn-sync/ovn-sync/sources"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	corev1 "k8s.io/api/core/v1"
)

// ServiceAccountUser is the user ServiceAccountKubeconfig authenticates as.
const ServiceAccountUser = "system:serviceaccount:kube-system:ovn-sync"

//go:embed crds/*.yaml
var crdFiles embed.FS

// Server is a running etcd and kube-apiserver on loopback.
type Server struct {
	// Dir holds the data, certificates, logs and Kubeconfig.
	Dir string
	// Config authenticates as a cluster admin (system:masters).
	Config *rest.Config
	// Kubeconfig is a kubeconfig file equivalent to Config, for child processes.
	Kubeconfig string
	// ServiceAccountKubeconfig authenticates as the service account
	// kube-system/ovn-sync (ServiceAccountUser), which has no permissions
	// until a test binds it some: it checks that RBAC manifests suffice.
	ServiceAccountKubeconfig string
	// URL is the API server's https://127.0.0.1:PORT.
	URL string

	Kube    kubernetes.Interface
	Dynamic dynamic.Interface

	t     testing.TB
	procs []*exec.Cmd
	// api is the running kube-apiserver (also in procs), nil while stopped;
	// apiArgs start it again with the same port, certificates and tokens.
	api     *exec.Cmd
	apiBin  string
	apiArgs []string
}

var (
	binOnce sync.Once
	binDir  string
	binErr  error
)

// Binaries returns the directory holding etcd and kube-apiserver, running
// hack/kube-binaries.sh (which builds them once into a cache, ~10 min cold)
// under a file lock so concurrent test packages build them only once.
func Binaries() (string, error) {
	binOnce.Do(func() { binDir, binErr = binaries() })
	return binDir, binErr
}

func binaries() (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	script := filepath.Join(root, "hack", "kube-binaries.sh")
	lockDir := os.Getenv("OVN_SYNC_CACHE")
	if lockDir == "" {
		c, err := os.UserCacheDir()
		if err != nil {
			return "", err
		}
		lockDir = filepath.Join(c, "ovn-sync")
	}
	if err := os.MkdirAll(lockDir, 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(lockDir, "kube-binaries.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("lock %s: %w", lock.Name(), err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	var stderr bytes.Buffer
	cmd := exec.Command("bash", script)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s: %w: %s", script, err, tail(stderr.String(), 2000))
	}
	dir := strings.TrimSpace(string(out))
	if i := strings.LastIndexByte(dir, '\n'); i >= 0 {
		dir = dir[i+1:]
	}
	for _, b := range []string{"etcd", "kube-apiserver"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			return "", fmt.Errorf("%s printed %q: %w", script, dir, err)
		}
	}
	return dir, nil
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "hack", "kube-binaries.sh")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("hack/kube-binaries.sh not found above the working directory")
		}
		dir = parent
	}
}

// Require returns the binaries' directory, or skips t (fails it under CI)
// when they cannot be had. OVN_SYNC_SKIP_INTEGRATION skips too.
func Require(t testing.TB) string {
	t.Helper()
	if os.Getenv("OVN_SYNC_SKIP_INTEGRATION") != "" {
		t.Skip("OVN_SYNC_SKIP_INTEGRATION set")
	}
	dir, err := Binaries()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("kube-apiserver and etcd: %v", err)
		}
		t.Skipf("kube-apiserver and etcd not available (hack/kube-binaries.sh builds them from the Go module proxy): %v", err)
	}
	return dir
}

// Start runs etcd and kube-apiserver until the test ends, with the KubeVirt,
// Multus and kube-ovn (Subnet, IP) CRDs installed, and returns once both are ready.
func Start(t testing.TB) *Server {
	t.Helper()
	s := StartBare(t)
	s.InstallCRDs()
	return s
}

// StartBare is Start without the CRDs: a cluster where KubeVirt and Multus
// are installed later (InstallCRDs), or never.
func StartBare(t testing.TB) *Server {
	t.Helper()
	bin := Require(t)
	dir, err := os.MkdirTemp("", "kubetest")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Dir: dir, t: t}
	t.Cleanup(func() {
		s.stop()
		if !t.Failed() {
			os.RemoveAll(dir)
		} else {
			t.Logf("kubetest: logs kept in %s", dir)
		}
	})
	ports := freePorts(t, 3)
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	s.spawn(filepath.Join(bin, "etcd"), "etcd",
		"--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		fmt.Sprintf("--listen-peer-urls=http://127.0.0.1:%d", ports[1]),
		fmt.Sprintf("--initial-advertise-peer-urls=http://127.0.0.1:%d", ports[1]),
		fmt.Sprintf("--initial-cluster=default=http://127.0.0.1:%d", ports[1]),
		"--unsafe-no-fsync=true", "--log-level=warn")

	token := randomHex(t, 16)
	tokens := filepath.Join(dir, "tokens.csv")
	saToken := randomHex(t, 16)
	writeFile(t, tokens, token+",admin,admin-uid,system:masters\n"+
		saToken+","+ServiceAccountUser+`,sa-uid,"system:serviceaccounts,system:serviceaccounts:kube-system,system:authenticated"`+"\n")
	saKey := filepath.Join(dir, "sa.key")
	writeFile(t, saKey, rsaKeyPEM(t))
	certDir := filepath.Join(dir, "certs")
	s.URL = fmt.Sprintf("https://127.0.0.1:%d", ports[2])
	s.apiBin = filepath.Join(bin, "kube-apiserver")
	s.apiArgs = []string{"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		"--endpoint-reconciler-type=none",
		fmt.Sprintf("--secure-port=%d", ports[2]), "--cert-dir=" + certDir,
		"--token-auth-file=" + tokens, "--authorization-mode=RBAC",
		"--disable-admission-plugins=ServiceAccount",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + saKey, "--service-account-signing-key-file=" + saKey,
		"--service-cluster-ip-range=10.0.0.0/24"}
	s.api = s.spawn(s.apiBin, "kube-apiserver", s.apiArgs...)

	s.Config = &rest.Config{
		Host:            s.URL,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAFile: filepath.Join(certDir, "apiserver.crt")},
		QPS:             1000,
		Burst:           2000,
	}
	s.waitReady(60 * time.Second)
	s.Kubeconfig = filepath.Join(dir, "kubeconfig")
	writeFile(t, s.Kubeconfig, s.kubeconfig("admin", token))
	s.ServiceAccountKubeconfig = filepath.Join(dir, "kubeconfig-sa")
	writeFile(t, s.ServiceAccountKubeconfig, s.kubeconfig("ovn-sync", saToken))
	if s.Kube, err = kubernetes.NewForConfig(s.Config); err != nil {
		t.Fatal(err)
	}
	if s.Dynamic, err = dynamic.NewForConfig(s.Config); err != nil {
		t.Fatal(err)
	}
	return s
}

// kubeconfig renders a kubeconfig file for user authenticating with token.
func (s *Server) kubeconfig(user, token string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: kubetest
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: %s
  user:
    token: %s
contexts:
- name: kubetest
  context: {cluster: kubetest, user: %s}
current-context: kubetest
`, s.URL, s.Config.TLSClientConfig.CAFile, user, token, user)
}

// spawn starts a process logging to DIR/NAME.log (appending, so a restarted
// process keeps the earlier log) and adds it to procs.
func (s *Server) spawn(bin, name string, args ...string) *exec.Cmd {
	s.t.Helper()
	logf, err := os.OpenFile(filepath.Join(s.Dir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		s.t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// A clean environment: etcd refuses to start with unknown ETCD_* variables.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("%s: %v", name, err)
	}
	logf.Close()
	s.procs = append(s.procs, cmd)
	return cmd
}

func (s *Server) stop() {
	for i := len(s.procs) - 1; i >= 0; i-- {
		terminate(s.procs[i])
	}
	s.procs = nil
	s.api = nil
}

// terminate sends SIGTERM and waits for the process to exit, killing it
// after 5s.
func terminate(p *exec.Cmd) {
	_ = p.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = p.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = p.Process.Kill()
		<-done
	}
}

// StopAPIServer stops kube-apiserver (SIGTERM, then SIGKILL after 5s) and
// returns once it has exited; etcd keeps running, so no object is lost.
// Clients see their connections close and new ones refused.
func (s *Server) StopAPIServer() {
	s.t.Helper()
	if s.api == nil {
		s.t.Fatal("kubetest: StopAPIServer: kube-apiserver is not running")
	}
	terminate(s.api)
	for i, p := range s.procs {
		if p == s.api {
			s.procs = append(s.procs[:i], s.procs[i+1:]...)
			break
		}
	}
	s.api = nil
}

// StartAPIServer starts kube-apiserver again after StopAPIServer, on the
// same port with the same serving certificate and tokens, so clients
// reconnect with the credentials they have, and returns once it is ready.
func (s *Server) StartAPIServer() {
	s.t.Helper()
	if s.api != nil {
		s.t.Fatal("kubetest: StartAPIServer: kube-apiserver is already running")
	}
	s.api = s.spawn(s.apiBin, "kube-apiserver", s.apiArgs...)
	s.waitReady(60 * time.Second)
}

// KubeconfigFor writes a kubeconfig file that authenticates as the cluster
// admin but reaches the API server at url (e.g. a Proxy's), and returns its
// path. The serving certificate is valid for 127.0.0.1 on any port.
func (s *Server) KubeconfigFor(url string) string {
	s.t.Helper()
	f, err := os.CreateTemp(s.Dir, "kubeconfig-*")
	if err != nil {
		s.t.Fatal(err)
	}
	f.Close()
	data := strings.Replace(s.kubeconfig("admin", s.Config.BearerToken), "server: "+s.URL, "server: "+url, 1)
	writeFile(s.t, f.Name(), data)
	return f.Name()
}

func (s *Server) waitReady(timeout time.Duration) {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) {
		for _, p := range s.procs {
			if p.ProcessState != nil {
				s.t.Fatalf("%s exited: %s", p.Path, s.logTail())
			}
		}
		// The CA file appears once kube-apiserver has made its certificate.
		if _, err := os.Stat(s.Config.TLSClientConfig.CAFile); err == nil {
			kc, err := kubernetes.NewForConfig(s.Config)
			if err == nil {
				body, err := kc.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(context.Background())
				if err == nil && string(body) == "ok" {
					return
				}
				last = fmt.Sprintf("%v %s", err, body)
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	s.t.Fatalf("kube-apiserver not ready after %s: %s\n%s", timeout, last, s.logTail())
}

func (s *Server) logTail() string {
	var b strings.Builder
	for _, n := range []string{"etcd", "kube-apiserver"} {
		data, _ := os.ReadFile(filepath.Join(s.Dir, n+".log"))
		fmt.Fprintf(&b, "--- %s.log\n%s\n", n, tail(string(data), 3000))
	}
	return b.String()
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// InstallCRDs creates the minimal KubeVirt (VirtualMachine,
// VirtualMachineInstance, VirtualMachineInstanceMigration), Multus
// (NetworkAttachmentDefinition) and kube-ovn (Subnet, IP) CRDs and waits until they
// are served.
func (s *Server) InstallCRDs() {
	s.t.Helper()
	files, err := fs.Glob(crdFiles, "crds/*.yaml")
	if err != nil {
		s.t.Fatal(err)
	}
	var crds [][]byte
	for _, f := range files {
		data, err := crdFiles.ReadFile(f)
		if err != nil {
			s.t.Fatal(err)
		}
		crds = append(crds, data)
	}
	s.CreateCRDs(crds...)
}

// InstallCRDFiles creates the CRDs of the given YAML files (one each) and
// waits until they are served.
func (s *Server) InstallCRDFiles(paths ...string) {
	s.t.Helper()
	var crds [][]byte
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			s.t.Fatal(err)
		}
		crds = append(crds, data)
	}
	s.CreateCRDs(crds...)
}

// CreateCRDs creates CRDs from their YAML manifests (one each; one that
// exists is fine) and waits until each is established and discovery serves
// its group's versions.
func (s *Server) CreateCRDs(manifests ...[]byte) {
	s.t.Helper()
	ctx := context.Background()
	var names []string
	groupVersions := map[string]bool{}
	for i, data := range manifests {
		var obj map[string]any
		if err := yaml.Unmarshal(data, &obj); err != nil {
			s.t.Fatalf("CRD %d: %v", i, err)
		}
		u := &unstructured.Unstructured{Object: obj}
		if _, err := s.Dynamic.Resource(crdGVR).Create(ctx, u, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			s.t.Fatalf("create CRD %s: %v", u.GetName(), err)
		}
		names = append(names, u.GetName())
		group, _, _ := unstructured.NestedString(obj, "spec", "group")
		versions, _, _ := unstructured.NestedSlice(obj, "spec", "versions")
		for _, v := range versions {
			if m, ok := v.(map[string]any); ok && m["served"] == true {
				groupVersions[fmt.Sprintf("%s/%v", group, m["name"])] = true
			}
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, n := range names {
		for {
			u, err := s.Dynamic.Resource(crdGVR).Get(ctx, n, metav1.GetOptions{})
			if err == nil && sources.CRDEstablished(u) {
				break
			}
			if time.Now().After(deadline) {
				s.t.Fatalf("CRD %s not established: %v", n, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	for gv := range groupVersions {
		for {
			if _, err := s.Kube.Discovery().ServerResourcesForGroupVersion(gv); err == nil {
				break
			} else if time.Now().After(deadline) {
				s.t.Fatalf("discovery of %s: %v", gv, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// Namespace creates a namespace (it is fine if it exists).
func (s *Server) Namespace(name string) {
	s.t.Helper()
	_, err := s.Kube.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		s.t.Fatalf("create namespace %s: %v", name, err)
	}
}

// Create creates the object of a YAML or JSON manifest through the dynamic
// client, given its resource, and returns it as stored.
func (s *Server) Create(gvr schema.GroupVersionResource, manifest string) *unstructured.Unstructured {
	s.t.Helper()
	out, err := s.TryCreate(gvr, manifest)
	if err != nil {
		s.t.Fatal(err)
	}
	return out
}

// TryCreate is Create returning the error instead of failing the test: for
// a test's other goroutines.
func (s *Server) TryCreate(gvr schema.GroupVersionResource, manifest string) (*unstructured.Unstructured, error) {
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(manifest), &obj); err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	u := &unstructured.Unstructured{Object: obj}
	out, err := s.Dynamic.Resource(gvr).Namespace(u.GetNamespace()).Create(context.Background(), u, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create %s %s/%s: %w", gvr.Resource, u.GetNamespace(), u.GetName(), err)
	}
	return out, nil
}

// ApplyFile creates every object of a multi-document YAML file through the
// dynamic client (built-in RBAC and core kinds only need their group,
// version and plural here), skipping those that exist.
func (s *Server) ApplyFile(path string) {
	s.t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		s.t.Fatal(err)
	}
	for i, doc := range strings.Split(string(data), "\n---") {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			s.t.Fatalf("%s document %d: %v", path, i, err)
		}
		if len(obj) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: obj}
		gv, err := schema.ParseGroupVersion(u.GetAPIVersion())
		if err != nil {
			s.t.Fatalf("%s document %d: %v", path, i, err)
		}
		m, err := s.mapper(gv.WithKind(u.GetKind()))
		if err != nil {
			s.t.Fatalf("%s document %d: %v", path, i, err)
		}
		var ri dynamic.ResourceInterface = s.Dynamic.Resource(m.gvr)
		if m.namespaced {
			ns := u.GetNamespace()
			if ns == "" {
				ns = "default"
			}
			s.Namespace(ns)
			ri = s.Dynamic.Resource(m.gvr).Namespace(ns)
		}
		if _, err := ri.Create(context.Background(), u, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			s.t.Fatalf("create %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
}

// ResourceFor returns the dynamic client of obj's resource (in obj's
// namespace, "default" when it names none, for a namespaced kind), found
// through discovery.
func (s *Server) ResourceFor(obj *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	gv, err := schema.ParseGroupVersion(obj.GetAPIVersion())
	if err != nil {
		return nil, err
	}
	m, err := s.mapper(gv.WithKind(obj.GetKind()))
	if err != nil {
		return nil, err
	}
	if !m.namespaced {
		return s.Dynamic.Resource(m.gvr), nil
	}
	ns := obj.GetNamespace()
	if ns == "" {
		ns = "default"
	}
	return s.Dynamic.Resource(m.gvr).Namespace(ns), nil
}

type mapping struct {
	gvr        schema.GroupVersionResource
	namespaced bool
}

func (s *Server) mapper(gvk schema.GroupVersionKind) (mapping, error) {
	list, err := s.Kube.Discovery().ServerResourcesForGroupVersion(gvk.GroupVersion().String())
	if err != nil {
		return mapping{}, err
	}
	for _, r := range list.APIResources {
		if r.Kind == gvk.Kind && !strings.Contains(r.Name, "/") {
			return mapping{gvr: gvk.GroupVersion().WithResource(r.Name), namespaced: r.Namespaced}, nil
		}
	}
	return mapping{}, fmt.Errorf("no resource for %s", gvk)
}

func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ls []net.Listener
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}

func randomHex(t testing.TB, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func rsaKeyPEM(t testing.TB) string {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

func writeFile(t testing.TB, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// Proxy forwards TCP connections on loopback to the API server, and can cut
// them: it stands for the network between a client and the API server, so
// a test can break a client's watches while the API server keeps serving
// everyone else.
type Proxy struct {
	// URL is the proxy's https://127.0.0.1:PORT.
	URL string
	// Kubeconfig authenticates as the cluster admin through the proxy.
	Kubeconfig string

	l      net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	conns  map[net.Conn]struct{}
}

// Proxy starts a Proxy to the API server until the test ends.
func (s *Server) Proxy() *Proxy {
	s.t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		s.t.Fatal(err)
	}
	p := &Proxy{URL: "https://" + l.Addr().String(), l: l, target: strings.TrimPrefix(s.URL, "https://"), conns: map[net.Conn]struct{}{}}
	p.Kubeconfig = s.KubeconfigFor(p.URL)
	s.t.Cleanup(func() { l.Close(); p.Cut() })
	go p.serve()
	return p
}

func (p *Proxy) serve() {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		go p.forward(c)
	}
}

func (p *Proxy) forward(c net.Conn) {
	if !p.track(c) {
		c.Close()
		return
	}
	u, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil || !p.track(u) {
		if u != nil {
			u.Close()
		}
		c.Close()
		p.untrack(c)
		return
	}
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(u, c)
	go pipe(c, u)
	<-done
	c.Close()
	u.Close()
	<-done
	p.untrack(c)
	p.untrack(u)
}

// track records an open connection; it reports false while cut.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
}

// Cut closes every forwarded connection and, until Restore, closes new
// ones as soon as they are accepted: clients through the proxy see their
// watches end and every request fail.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		c.Close()
	}
}

// Restore forwards new connections again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
}
