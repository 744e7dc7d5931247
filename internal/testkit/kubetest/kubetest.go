// Package kubetest runs a real Kubernetes control plane on loopback for the Kubernetes driver tests.
//
// A Cluster is one etcd, one kube-apiserver and one kube-controller-manager (v1.37.2, built by
// `make kube-bin` into $OCC_KUBE_BIN, default ${XDG_CACHE_HOME:-$HOME/.cache}/occ/kube/v1.37.2),
// each in its own process group on free loopback ports, plus a kubelet simulator (see Kubelet) that
// binds Pods to the fake Node "kubetest-node" and reports them Running and Ready. There is no
// scheduler, no kube-proxy and no container runtime; the controllers that run are deployment,
// replicaset, endpointslice, namespace, garbagecollector, serviceaccount, serviceaccount-token,
// root-ca-cert-publisher and pvc-protection, so Deployments roll out, EndpointSlices follow Pod
// readiness, namespaces (with their PVCs) finish terminating and owned objects are collected.
//
// The project does not depend on client-go: the harness and its Client speak JSON over net/http.
//
// Behaviour worth knowing in tests:
//
//   - The ServiceAccount admission plugin is on: a Pod's ServiceAccount must exist (the
//     serviceaccount controller creates "default" in a new namespace within about a second).
//   - Namespace deletion takes at least 5 s: the namespace controller waits a hard-coded
//     namespaceDeletionGracePeriod of 5 s before it cleans a terminating namespace.
//   - The kube-apiserver runs with --shutdown-watch-termination-grace-period 1s, so StopAPIServer
//     takes about 1 s (without it the controller manager's watches hold the shutdown for 15 s+).
//   - Each cluster works in a new directory under os.TempDir (certificates, tokens.csv, etcd data,
//     one log per process, kubelet.log for the simulator and kubetest.log for start-up timings). It
//     is removed when the cluster stops, unless a test failed: then it is kept and its path (plus
//     log tails for private clusters) printed.
//
// Identities. The API server authenticates static bearer tokens (Cluster.Token):
//
//   - "admin": group system:masters;
//   - "worker": the identity the Kubernetes drivers run as in tests (not cluster-admin), bound with
//     ClusterRoleBindings to ClusterRoles "occ-namespace-worker" and "occ-tenant-worker";
//   - "api": bound to "occ-namespace-observer", "occ-tenant-worker" and "occ-tenant-api" (the chart's
//     tenant API role, which alone grants pods/log and Events: runtime views run as "api");
//   - "nobody": authenticated, no grants;
//   - Options.ExtraIdentities (private clusters): authenticated, no grants.
//
// The ClusterRoles mirror deploy/helm/occ/templates/rbac.yaml. Where the chart binds the tenant
// roles per tenant namespace with RoleBindings, this harness binds "occ-tenant-worker" cluster-wide
// (as the chart's cluster-wide tenant binding would), so tests may create any namespace. Use
// GrantClusterRole / RevokeClusterRole (undone when the test ends) to build an identity lacking
// access, preferably on an identity the test alone uses.
//
// Use it from TestMain:
//
//	func TestMain(m *testing.M) { kubetest.Main(m) }
//
// and call Shared(t) in tests (one cluster per test binary, started on first use), or Start(t, opts)
// for a private cluster (for tests that stop and restart the API server).
package kubetest

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// KubeVersion is the Kubernetes version of the binaries the harness runs.
const KubeVersion = "v1.37.2"

// The static identities.
const (
	Admin  = "admin"
	Worker = "worker"
	API    = "api"
	Nobody = "nobody"
)

// Options configure a private cluster.
type Options struct {
	// ExtraIdentities are additional static token identities (authenticated, no grants).
	ExtraIdentities []string
	// NoControllerManager skips kube-controller-manager (no rollouts, GC or namespace deletion).
	NoControllerManager bool
	// NoKubelet skips the kubelet simulator (and the Node).
	NoKubelet bool
}

// Cluster is one running etcd + kube-apiserver + kube-controller-manager on loopback.
type Cluster struct {
	URL    string // https://127.0.0.1:<port>
	CAFile string // PEM of the cluster CA (serving cert chain)
	CAData []byte
	Dir    string // working dir (certs, tokens, logs)

	bin      string
	pki      *pki
	tokens   map[string]string
	identity []string // in tokens.csv order

	etcdPort, etcdPeerPort, apiPort, kcmPort int

	mu        sync.Mutex // guards the process fields
	etcd      *proc
	apiserver *proc
	kcm       *proc
	kubelet   *Kubelet

	clientOnce sync.Once
	client     *http.Client
	keep       atomic.Bool // keep Dir (a test failed)
}

// --- shared cluster ------------------------------------------------------------------------------

var shared struct {
	mainCalled bool
	once       sync.Once
	c          *Cluster
	err        error
	startup    time.Duration
}

// Runner runs a test binary's tests: *testing.M, or what another harness's wrapper returns.
type Runner interface{ Run() int }

// Main runs the tests, then stops the shared cluster if one was started. It exits with m's code.
// When a test failed, the cluster's directory (logs) is kept and its path printed.
func Main(m Runner) { os.Exit(Wrap(m).Run()) }

// Wrap is Main without the exit, for a TestMain that also runs another harness:
// pgtest.Main(kubetest.Wrap(m)).
func Wrap(m Runner) Runner {
	shared.mainCalled = true
	return runnerFunc(func() int {
		code := m.Run()
		if c := shared.c; c != nil {
			failed := code != 0 || c.keep.Load()
			if failed {
				fmt.Fprintf(os.Stderr, "kubetest: shared cluster logs kept in %s\n%s", c.Dir, c.logTails(15))
			}
			c.stop(failed)
		}
		return code
	})
}

type runnerFunc func() int

func (f runnerFunc) Run() int { return f() }

// Shared returns the test binary's shared cluster, starting it on first use. Tests share it: use
// unique namespace names. TestMain must call Main.
func Shared(t testing.TB) *Cluster {
	t.Helper()
	if !shared.mainCalled {
		t.Fatal("kubetest: call kubetest.Main(m) from TestMain")
	}
	shared.once.Do(func() {
		begin := time.Now()
		shared.c, shared.err = start(Options{})
		shared.startup = time.Since(begin)
	})
	if shared.err != nil {
		t.Fatalf("kubetest: start the shared cluster: %v", shared.err)
	}
	c := shared.c
	t.Cleanup(func() {
		if t.Failed() && !c.keep.Swap(true) {
			t.Logf("kubetest: cluster logs in %s (kept)", c.Dir)
		}
	})
	return c
}

// SharedStartup is how long the shared cluster took to start (0 before Shared was first called).
func SharedStartup() time.Duration { return shared.startup }

// Start starts a private cluster that is stopped when the test ends.
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	c, err := start(opts)
	if err != nil {
		t.Fatalf("kubetest: start a cluster: %v", err)
	}
	t.Cleanup(func() {
		failed := t.Failed()
		if failed {
			t.Logf("kubetest: cluster logs kept in %s\n%s", c.Dir, c.logTails(30))
		}
		c.stop(failed)
	})
	return c
}

// --- binaries ------------------------------------------------------------------------------------

// BinDir returns the directory the harness takes etcd, kube-apiserver and kube-controller-manager
// from: $OCC_KUBE_BIN, else ${XDG_CACHE_HOME:-$HOME/.cache}/occ/kube/<KubeVersion> (tools/kube/build.sh).
func BinDir() string {
	if d := os.Getenv("OCC_KUBE_BIN"); d != "" {
		return d
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "occ", "kube", KubeVersion)
}

func findBinaries(withKCM bool) (string, error) {
	dir := BinDir()
	names := []string{"etcd", "kube-apiserver"}
	if withKCM {
		names = append(names, "kube-controller-manager")
	}
	var missing []string
	for _, n := range names {
		if fi, err := os.Stat(filepath.Join(dir, n)); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return "", fmt.Errorf("the Kubernetes test binaries are missing in %s: %s; run `make kube-bin` "+
			"(tools/kube/build.sh, about 10 minutes the first time) or set OCC_KUBE_BIN to a directory holding them",
			dir, strings.Join(missing, ", "))
	}
	return dir, nil
}

// --- start and stop ------------------------------------------------------------------------------

func start(opts Options) (_ *Cluster, err error) {
	withKCM := !opts.NoControllerManager
	bin, err := findBinaries(withKCM)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "occ-kubetest-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{Dir: dir, bin: bin, tokens: map[string]string{}}
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w\n%s", err, c.logTails(40))
			c.stop(false)
		}
	}()
	if c.pki, err = generatePKI(dir); err != nil {
		return nil, fmt.Errorf("certificates: %w", err)
	}
	c.CAFile, c.CAData = c.pki.caCert, c.pki.caPEM
	if err := c.writeTokens(opts.ExtraIdentities); err != nil {
		return nil, err
	}

	t0 := time.Now()
	for attempt := 1; ; attempt++ {
		ports, perr := freePorts(3)
		if perr != nil {
			return nil, perr
		}
		c.etcdPort, c.etcdPeerPort, c.apiPort = ports[0], ports[1], ports[2]
		c.URL = fmt.Sprintf("https://127.0.0.1:%d", c.apiPort)
		err = c.startEtcdAndAPIServer()
		if err == nil {
			break
		}
		if attempt == 5 || !c.portRace() {
			return nil, err
		}
		c.stopProcs()
		_ = os.RemoveAll(filepath.Join(dir, "etcd-data"))
		for _, f := range []string{"etcd.log", "kube-apiserver.log"} {
			_ = os.Rename(filepath.Join(dir, f), filepath.Join(dir, fmt.Sprintf("%s.attempt%d", f, attempt)))
		}
	}

	c.note("etcd + kube-apiserver ready (%s) in %s", c.URL, time.Since(t0))
	t1 := time.Now()
	if err := c.setupRBAC(); err != nil {
		return nil, fmt.Errorf("RBAC: %w", err)
	}
	c.note("RBAC in %s", time.Since(t1))
	if withKCM {
		t1 = time.Now()
		if err := c.startKCM(); err != nil {
			return nil, err
		}
		c.note("kube-controller-manager healthy in %s", time.Since(t1))
	}
	if !opts.NoKubelet {
		k, kerr := startKubelet(c)
		if kerr != nil {
			return nil, fmt.Errorf("kubelet simulator: %w", kerr)
		}
		c.kubelet = k
	}
	c.note("cluster started in %s", time.Since(t0))
	return c, nil
}

// note appends a line to <Dir>/kubetest.log.
func (c *Cluster) note(format string, args ...any) {
	f, err := os.OpenFile(filepath.Join(c.Dir, "kubetest.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	fmt.Fprintf(f, "%s %s\n", time.Now().Format(time.RFC3339Nano), fmt.Sprintf(format, args...))
	f.Close()
}

func (c *Cluster) writeTokens(extra []string) error {
	ids := append([]string{Admin, Worker, API, Nobody}, extra...)
	var b strings.Builder
	for _, id := range ids {
		if _, dup := c.tokens[id]; dup {
			return fmt.Errorf("identity %q given twice", id)
		}
		if id == "" || strings.ContainsAny(id, ",\"\n") {
			return fmt.Errorf("invalid identity %q", id)
		}
		rnd := make([]byte, 16)
		_, _ = rand.Read(rnd)
		tok := "kubetest-" + id + "-" + hex.EncodeToString(rnd)
		c.tokens[id] = tok
		c.identity = append(c.identity, id)
		// token,user,uid,"group1,group2"
		fmt.Fprintf(&b, "%s,%s,kubetest-%s", tok, id, id)
		if id == Admin {
			b.WriteString(`,"system:masters"`)
		}
		b.WriteString("\n")
	}
	return os.WriteFile(filepath.Join(c.Dir, "tokens.csv"), []byte(b.String()), 0o600)
}

func (c *Cluster) startEtcdAndAPIServer() error {
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", c.etcdPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", c.etcdPeerPort)
	etcd, err := startProc(c.Dir, "etcd", filepath.Join(c.bin, "etcd"),
		"--name", "kubetest", "--data-dir", filepath.Join(c.Dir, "etcd-data"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "kubetest="+peerURL,
		"--unsafe-no-fsync", "--log-level", "warn")
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.etcd = etcd
	c.mu.Unlock()
	return c.startAPIServer()
}

func (c *Cluster) apiServerArgs() []string {
	return []string{
		"--etcd-servers", fmt.Sprintf("http://127.0.0.1:%d", c.etcdPort),
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(c.apiPort),
		"--advertise-address", "127.0.0.1", "--endpoint-reconciler-type", "none",
		"--tls-cert-file", c.pki.servingCert, "--tls-private-key-file", c.pki.servingK,
		"--client-ca-file", c.pki.caCert, "--token-auth-file", filepath.Join(c.Dir, "tokens.csv"),
		"--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file", c.pki.saPub, "--service-account-signing-key-file", c.pki.saKey,
		"--service-cluster-ip-range", "10.0.0.0/24",
		"--authorization-mode", "RBAC", "--allow-privileged=false",
		"--cert-dir", filepath.Join(c.Dir, "apiserver-certs"),
		"--shutdown-watch-termination-grace-period", "1s",
		// pods/log and the other node proxies dial the kubelet simulator at the Node's InternalIP
		// (its Hostname does not resolve), verifying its certificate and presenting a client one.
		"--kubelet-preferred-address-types", "InternalIP",
		"--kubelet-certificate-authority", c.pki.caCert,
		"--kubelet-client-certificate", c.pki.kubeletClientCert, "--kubelet-client-key", c.pki.kubeletClientKey,
	}
}

func (c *Cluster) startAPIServer() error {
	p, err := startProc(c.Dir, "kube-apiserver", filepath.Join(c.bin, "kube-apiserver"), c.apiServerArgs()...)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.apiserver = p
	c.mu.Unlock()
	return c.waitReady(p, 60*time.Second)
}

// waitReady polls /readyz every 100 ms until it answers 200.
func (c *Cluster) waitReady(p *proc, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	admin := c.Admin()
	var lastErr error
	for {
		select {
		case <-p.exited:
			return fmt.Errorf("kube-apiserver exited during startup (%v)", p.cmd.ProcessState)
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := admin.do(ctx, http.MethodGet, "/readyz", "", nil)
		cancel()
		if err == nil {
			return nil
		}
		lastErr = err
		if time.Now().After(deadline) {
			return fmt.Errorf("kube-apiserver not ready after %s: %v", timeout, lastErr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// portRace reports whether a log of the failed start says a port was taken.
func (c *Cluster) portRace() bool {
	for _, f := range []string{"etcd.log", "kube-apiserver.log", "kube-controller-manager.log"} {
		b, _ := os.ReadFile(filepath.Join(c.Dir, f))
		if strings.Contains(string(b), "address already in use") {
			return true
		}
	}
	return false
}

func (c *Cluster) startKCM() error {
	kubeconfig := filepath.Join(c.Dir, "kcm.kubeconfig")
	if err := c.writeKubeconfig(kubeconfig, Admin, "kubetest"); err != nil {
		return err
	}
	for attempt := 1; ; attempt++ {
		ports, err := freePorts(1)
		if err != nil {
			return err
		}
		c.kcmPort = ports[0]
		p, err := startProc(c.Dir, "kube-controller-manager", filepath.Join(c.bin, "kube-controller-manager"),
			"--kubeconfig", kubeconfig,
			"--leader-elect=false",
			"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(c.kcmPort),
			"--cert-dir", filepath.Join(c.Dir, "kcm-certs"),
			"--service-account-private-key-file", c.pki.saKey,
			"--root-ca-file", c.pki.caCert,
			"--use-service-account-credentials=false",
			"--controllers", kcmControllers,
			"--concurrent-deployment-syncs", "5", "--concurrent-replicaset-syncs", "5",
			"--concurrent-namespace-syncs", "5",
		)
		if err != nil {
			return err
		}
		c.mu.Lock()
		c.kcm = p
		c.mu.Unlock()
		err = waitHealthz(p, c.kcmPort, 60*time.Second)
		if err == nil {
			return nil
		}
		if attempt == 5 || !c.portRace() {
			return err
		}
		stopProc(p)
		_ = os.Rename(p.logPath, fmt.Sprintf("%s.attempt%d", p.logPath, attempt))
	}
}

// kcmControllers are the controllers kube-controller-manager runs: no node lifecycle controller
// (the fake Node sends no heartbeats) and no scheduler-related ones.
const kcmControllers = "deployment-controller,replicaset-controller,endpointslice-controller," +
	"namespace-controller,garbage-collector-controller,serviceaccount-controller," +
	"serviceaccount-token-controller,root-ca-certificate-publisher-controller," +
	"persistentvolumeclaim-protection-controller"

// waitHealthz polls kube-controller-manager's /healthz (self-signed serving certificate).
func waitHealthz(p *proc, port int, timeout time.Duration) error {
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // loopback health probe
	}}
	defer hc.CloseIdleConnections()
	deadline := time.Now().Add(timeout)
	var lastErr error
	for {
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited during startup (%v)", p.name, p.cmd.ProcessState)
		default:
		}
		resp, err := hc.Get(fmt.Sprintf("https://127.0.0.1:%d/healthz", port))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		lastErr = err
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not healthy after %s: %v", p.name, timeout, lastErr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stopProcs stops the kubelet simulator, kube-controller-manager, kube-apiserver and etcd, in that
// order, waiting for each.
func (c *Cluster) stopProcs() {
	if c.kubelet != nil {
		c.kubelet.stop()
	}
	c.mu.Lock()
	procs := []*proc{c.kcm, c.apiserver, c.etcd}
	c.kcm, c.apiserver, c.etcd = nil, nil, nil
	c.mu.Unlock()
	for _, p := range procs {
		if p != nil {
			stopProc(p)
		}
	}
}

func (c *Cluster) stop(keepDir bool) {
	c.stopProcs()
	if c.client != nil {
		c.client.CloseIdleConnections()
	}
	if !keepDir {
		_ = os.RemoveAll(c.Dir)
	}
}

// StopAPIServer stops kube-apiserver only and waits for it to exit; etcd and the controllers keep
// running and the URL stays the same (StartAPIServer uses the same port).
func (c *Cluster) StopAPIServer(t testing.TB) {
	t.Helper()
	c.mu.Lock()
	p := c.apiserver
	c.apiserver = nil
	c.mu.Unlock()
	if p == nil {
		t.Fatal("kubetest: StopAPIServer: kube-apiserver is not running")
	}
	begin := time.Now()
	stopProc(p)
	c.httpClient().CloseIdleConnections()
	c.note("kube-apiserver stopped in %s", time.Since(begin))
}

// StartAPIServer starts kube-apiserver again on the same port with the same certificates and
// waits for /readyz and for the initial bindings to be authorized again.
func (c *Cluster) StartAPIServer(t testing.TB) {
	t.Helper()
	c.mu.Lock()
	running := c.apiserver != nil
	c.mu.Unlock()
	if running {
		t.Fatal("kubetest: StartAPIServer: kube-apiserver is already running")
	}
	begin := time.Now()
	if err := c.startAPIServer(); err != nil {
		t.Fatalf("kubetest: restart kube-apiserver: %v\n%s", err, c.logTail("kube-apiserver.log", 40))
	}
	// /readyz answers before the RBAC authorizer has loaded the bindings: until then every
	// identity but admin is refused with 403, which a test would take for the server's answer.
	if err := c.waitInitialBindings(); err != nil {
		t.Fatalf("kubetest: restarted kube-apiserver: %v", err)
	}
	c.note("kube-apiserver restarted in %s", time.Since(begin))
}

// --- processes -----------------------------------------------------------------------------------

type proc struct {
	name    string
	cmd     *exec.Cmd
	exited  chan struct{}
	log     *os.File
	logPath string
}

// startProc starts a binary in its own process group, appending its output to <dir>/<name>.log.
func startProc(dir, name, path string, args ...string) (*proc, error) {
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(logFile, "--- %s %s %s\n", time.Now().Format(time.RFC3339Nano), path, strings.Join(args, " "))
	cmd := exec.Command(path, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Own process group (a terminal's Ctrl-C does not reach it; stopProc can kill the group);
	// Pdeathsig: if the test binary dies, the process is killed instead of outliving it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, exited: make(chan struct{}), log: logFile, logPath: logPath}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	return p, nil
}

// stopProc sends SIGTERM, waits up to 15 s, then kills the process group.
func stopProc(p *proc) {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(15 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
	}
	// Children left in the group (none expected).
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	p.log.Close()
}

func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// logTail returns the last n lines of a log file in Dir.
func (c *Cluster) logTail(file string, n int) string {
	b, err := os.ReadFile(filepath.Join(c.Dir, file))
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func (c *Cluster) logTails(n int) string {
	var b strings.Builder
	for _, f := range []string{"kubetest.log", "etcd.log", "kube-apiserver.log", "kube-controller-manager.log", "kubelet.log"} {
		if tail := c.logTail(f, n); tail != "" {
			fmt.Fprintf(&b, "--- tail of %s:\n%s\n", filepath.Join(c.Dir, f), tail)
		}
	}
	return b.String()
}

// --- identities and clients ----------------------------------------------------------------------

// Identities lists the static identities of the cluster.
func (c *Cluster) Identities() []string { return append([]string(nil), c.identity...) }

// Token returns the bearer token of a static identity. It panics for an unknown identity.
func (c *Cluster) Token(identity string) string {
	tok, ok := c.tokens[identity]
	if !ok {
		ids := c.Identities()
		sort.Strings(ids)
		panic(fmt.Sprintf("kubetest: unknown identity %q (have %s)", identity, strings.Join(ids, ", ")))
	}
	return tok
}

// Admin returns a client with the admin (system:masters) token.
func (c *Cluster) Admin() *Client { return c.As(Admin) }

// As returns a client with the token of identity.
func (c *Cluster) As(identity string) *Client {
	return &Client{cluster: c, identity: identity, token: c.Token(identity)}
}

// Anonymous returns a client that sends no credentials.
func (c *Cluster) Anonymous() *Client { return &Client{cluster: c, identity: "system:anonymous"} }

// Kubelet returns the kubelet simulator (nil with Options.NoKubelet).
func (c *Cluster) Kubelet() *Kubelet { return c.kubelet }

func (c *Cluster) httpClient() *http.Client {
	c.clientOnce.Do(func() {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(c.CAData)
		c.client = &http.Client{Transport: &http.Transport{
			TLSClientConfig:     &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			MaxIdleConnsPerHost: 16,
			IdleConnTimeout:     30 * time.Second,
			ForceAttemptHTTP2:   true,
		}}
	})
	return c.client
}

// HTTPClient returns an *http.Client trusting the cluster CA (no credentials).
func (c *Cluster) HTTPClient() *http.Client { return c.httpClient() }

// WriteKubeconfig writes a kubeconfig (server, certificate-authority path, token user) whose
// current context is contextName, and returns its absolute path. It is removed when the test ends.
func (c *Cluster) WriteKubeconfig(t testing.TB, identity, contextName string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := c.writeKubeconfig(path, identity, contextName); err != nil {
		t.Fatalf("kubetest: write kubeconfig: %v", err)
	}
	return path
}

func (c *Cluster) writeKubeconfig(path, identity, contextName string) error {
	cfg := map[string]any{
		"apiVersion": "v1",
		"kind":       "Config",
		"clusters": []any{map[string]any{"name": "kubetest", "cluster": map[string]any{
			"server": c.URL, "certificate-authority": c.CAFile}}},
		"users": []any{map[string]any{"name": identity, "user": map[string]any{"token": c.Token(identity)}}},
		"contexts": []any{map[string]any{"name": contextName, "context": map[string]any{
			"cluster": "kubetest", "user": identity}}},
		"current-context": contextName,
	}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		return err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	return os.WriteFile(abs, b, 0o600)
}

// WriteTokenFile writes the bearer token of identity (no trailing newline) to a file removed when
// the test ends, and returns its absolute path.
func (c *Cluster) WriteTokenFile(t testing.TB, identity string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(path, []byte(c.Token(identity)), 0o600); err != nil {
		t.Fatalf("kubetest: write token file: %v", err)
	}
	return path
}
