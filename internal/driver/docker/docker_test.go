package docker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/driver/drivertest"
)

const secretish = "sk-proj-abcdefghijklmnopqrstuvwxyz"

// testRunLabel tags every network this test binary creates on a real engine, so cleanup can find
// them (and an operator can: docker network ls --filter label=occ.test.run).
const testRunLabel = "occ.test.run"

var (
	runID      = uuid.NewString()
	engineOnce sync.Once
	engineErr  error
	// networkSlots bounds how many tests hold networks on the real engine at once: every bridge
	// network takes a subnet from the engine's limited default address pools.
	networkSlots = make(chan struct{}, 6)
)

// requireEngine skips the test, visibly, unless the Docker Engine at DefaultSocket answers /_ping.
func requireEngine(t *testing.T) {
	t.Helper()
	engineOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		engineErr = newEngine(DefaultSocket, 5*time.Second).ping(ctx)
	})
	if engineErr != nil {
		t.Skipf("SKIP: Docker Engine not reachable at %s (GET /_ping: %s); Docker integration tests did not run", DefaultSocket, driver.ErrorClass(engineErr))
	}
}

// realDriver returns a driver for the real engine whose networks carry this run's label, holding a
// network slot until the test ends and removing the test's leftover networks then.
func realDriver(t *testing.T) *Driver {
	t.Helper()
	requireEngine(t)
	networkSlots <- struct{}{}
	testLabel := runID + "-" + uuid.NewString()[:8]
	d, err := New("compute-docker-test", Config{ExtraLabels: map[string]string{testRunLabel: testLabel}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		defer func() { <-networkSlots }()
		removeLabelled(t, testLabel)
	})
	return d
}

// removeLabelled removes every network tagged with the test label value.
func removeLabelled(t *testing.T, value string) {
	e := newEngine(DefaultSocket, 10*time.Second)
	ctx := context.Background()
	filters, _ := json.Marshal(map[string]map[string]bool{"label": {testRunLabel + "=" + value: true}})
	var nets []network
	if _, err := e.do(ctx, http.MethodGet, "/networks", url.Values{"filters": {string(filters)}}, nil, &nets); err != nil {
		t.Errorf("cleanup: listing test networks: %v", err)
		return
	}
	for _, n := range nets {
		if err := e.removeNetwork(ctx, n.ID); err != nil {
			t.Errorf("cleanup: removing test network %s: %v", n.Name, err)
		}
	}
}

// inspected adds the contract suite's Inspector, counting networks with the exact name.
type inspected struct{ *Driver }

func (d inspected) NamespaceCopies(ctx context.Context, ns driver.Namespace) (int, error) {
	nets, err := d.engine.networksNamed(ctx, NetworkName(ns.ID))
	return len(nets), err
}

func TestContract(t *testing.T) {
	t.Parallel()
	requireEngine(t)
	drivertest.RunComputeContract(t, func(t *testing.T) driver.Compute { return inspected{realDriver(t)} })
}

func TestNetworkName(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 31) + "_b"
	sum := sha256.Sum256([]byte(long))
	cases := map[string]string{
		"ns_0f8fad5b-d9cb-469f-a165-70867728950e": "oce-ns-0f8fad5b-d9cb-469f-a165-70867-8794429c07dc",
		"Weird__ID--With..Stuff":                  "oce-weird-id-with-stuff-29cea2e42bbc",
		"___":                                     "oce-bda251550bf0",
		long:                                      "oce-" + strings.Repeat("a", 31) + "-" + hex.EncodeToString(sum[:])[:12],
	}
	for id, want := range cases {
		if got := NetworkName(id); got != want {
			t.Errorf("NetworkName(%q) = %q, want %q", id, got, want)
		}
	}
}

func TestEnsureCreatesALabelledBridgeNetwork(t *testing.T) {
	t.Parallel()
	d := realDriver(t)
	ns := drivertest.NewNamespace()
	drivertest.EnsureReady(t, d, ns)

	var got struct {
		Name   string
		Driver string
		Labels map[string]string
	}
	status, err := d.engine.do(context.Background(), http.MethodGet, "/networks/"+NetworkName(ns.ID), nil, nil, &got)
	if err != nil || status != http.StatusOK {
		t.Fatalf("inspect: status %d, %v", status, err)
	}
	want := map[string]string{
		"org.openclaw.enterprise.managed":        "true",
		"org.openclaw.enterprise.compute-driver": "docker",
		"org.openclaw.enterprise.namespace-id":   ns.ID,
	}
	for k, v := range want {
		if got.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, got.Labels[k], v)
		}
	}
	if got.Name != NetworkName(ns.ID) || got.Driver != "bridge" || got.Labels[testRunLabel] == "" {
		t.Fatalf("network = %+v", got)
	}
}

func TestForeignNetworksAreRefusedAndKept(t *testing.T) {
	t.Parallel()
	d := realDriver(t)
	ctx := context.Background()
	testLabel := d.extraLabels[testRunLabel]

	unlabelled := drivertest.NewNamespace()
	otherTenant := drivertest.NewNamespace()
	foreignLabels := Labels(drivertest.NewNamespace().ID) // a labelled network of another Namespace
	for ns, labels := range map[string]map[string]string{
		unlabelled.ID:  {testRunLabel: testLabel},
		otherTenant.ID: {testRunLabel: testLabel, LabelManaged: "true", LabelComputeDriver: Name, LabelNamespaceID: foreignLabels[LabelNamespaceID]},
	} {
		if _, err := d.engine.createNetwork(ctx, NetworkName(ns), labels); err != nil {
			t.Fatalf("creating the foreign network: %v", err)
		}
	}
	for _, ns := range []driver.Namespace{unlabelled, otherTenant} {
		obs, err := d.EnsureNamespace(ctx, ns)
		if err != nil || obs.Failure != driver.FailurePermanent || *obs.Ready {
			t.Fatalf("ensure over a foreign network = %+v, %v; want a permanent failure", obs, err)
		}
		if strings.Contains(obs.Reason, foreignLabels[LabelNamespaceID]) || obs.Reason == "" {
			t.Fatalf("reason %q", obs.Reason)
		}
		obs, err = d.DeleteNamespace(ctx, ns)
		if err != nil || obs.Failure != driver.FailurePermanent || *obs.Deleted {
			t.Fatalf("delete over a foreign network = %+v, %v; want a permanent failure", obs, err)
		}
		if n, _ := (inspected{d}).NamespaceCopies(ctx, ns); n != 1 {
			t.Fatalf("the foreign network was touched: %d copies", n)
		}
	}
}

func TestExistingNamespaceIsRefused(t *testing.T) {
	t.Parallel()
	d, err := New("compute-docker-test", Config{Socket: "/nonexistent/docker.sock"})
	if err != nil {
		t.Fatal(err)
	}
	name := "team-a"
	ns := drivertest.NewNamespace()
	ns.ExistingNamespace = &name
	obs, err := d.EnsureNamespace(context.Background(), ns)
	if err != nil || obs.Failure != driver.FailurePermanent || driver.CheckEnsureObservation(ns.ID, obs) != nil {
		t.Fatalf("ensure with existingNamespace = %+v, %v", obs, err)
	}
}

func TestRevisionsAreRefusedAndStopsAreNoOps(t *testing.T) {
	t.Parallel()
	d, err := New("compute-docker-test", Config{Socket: "/nonexistent/docker.sock"})
	if err != nil {
		t.Fatal(err)
	}
	rev := drivertest.NewRevision(d, drivertest.NewNamespace().ID)
	for _, method := range []string{"", driver.HarnessAuthRuntime, driver.HarnessAuthAPIKey, driver.HarnessAuthCodexPAT} {
		rev.HarnessAuthMethod = method
		_, err := d.PrepareRevision(context.Background(), rev, driver.RevisionContext{})
		var unsupported *driver.UnsupportedError
		if !errors.As(err, &unsupported) || unsupported.Code != driver.CodeHarnessAuthenticationUnsupported || !driver.IsPermanent(err) {
			t.Fatalf("PrepareRevision(%q) = %v", method, err)
		}
		if driver.SupportsHarnessAuth(d, method) {
			t.Fatalf("docker claims to support %q", method)
		}
	}
	if err := d.StopRevision(context.Background(), rev, driver.StopOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := d.RetireRevision(context.Background(), rev); err != nil {
		t.Fatal(err)
	}
}

func TestPreflight(t *testing.T) {
	t.Parallel()
	dir := shortTempDir(t)
	d, err := New("compute-docker-test", Config{Socket: filepath.Join(dir, "missing.sock"), RequestTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.Preflight(context.Background())
	var pf *driver.PreflightError
	if !errors.As(err, &pf) || pf.Code != driver.CodeDockerEngineUnavailable || pf.Host != "unix://"+filepath.Join(dir, "missing.sock") {
		t.Fatalf("Preflight against a missing socket = %v", err)
	}

	t.Run("real engine", func(t *testing.T) {
		t.Parallel()
		requireEngine(t)
		d, err := New("compute-docker-test", Config{})
		if err != nil {
			t.Fatal(err)
		}
		if warnings, err := d.Preflight(context.Background()); err != nil || len(warnings) != 0 {
			t.Fatalf("Preflight = %v, %v", warnings, err)
		}
	})
}

// ---- a fake engine on a Unix socket, for the failures a real engine will not produce on demand ----

func shortTempDir(t *testing.T) string {
	t.Helper()
	// t.TempDir can exceed the 107-byte socket path limit; /tmp keeps it short.
	dir, err := os.MkdirTemp("", "occdk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

func fakeEngine(t *testing.T, h http.HandlerFunc, timeout time.Duration) *Driver {
	t.Helper()
	socket := filepath.Join(shortTempDir(t), "e.sock")
	l, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	_ = srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	d, err := New("compute-docker-test", Config{Socket: socket, RequestTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func TestEngineFailuresAreClassified(t *testing.T) {
	t.Parallel()
	leak := func(w http.ResponseWriter, status int) {
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"message":"` + secretish + ` /var/lib/docker/private"}`))
	}
	stall := func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }
	listEmpty := func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method == http.MethodGet && r.URL.Path == "/networks" {
			writeJSON(w, http.StatusOK, []network{})
			return true
		}
		return false
	}
	cases := []struct {
		name    string
		handler http.HandlerFunc
		failure string
		contain string
	}{
		{"list 500", func(w http.ResponseWriter, r *http.Request) { leak(w, 500) }, driver.FailureRetryable, "unavailable"},
		{"list 429", func(w http.ResponseWriter, r *http.Request) { leak(w, 429) }, driver.FailureRetryable, "unavailable"},
		{"list stalls past the request timeout", stall, driver.FailureRetryable, "timeout"},
		{"list sends garbage", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("{" + secretish)) }, driver.FailureRetryable, "cannot read"},
		{"create 400", func(w http.ResponseWriter, r *http.Request) {
			if !listEmpty(w, r) {
				leak(w, 400)
			}
		}, driver.FailurePermanent, "HTTP status 400"},
		{"create 403", func(w http.ResponseWriter, r *http.Request) {
			if !listEmpty(w, r) {
				leak(w, 403)
			}
		}, driver.FailurePermanent, "HTTP status 403"},
		{"create 418", func(w http.ResponseWriter, r *http.Request) {
			if !listEmpty(w, r) {
				leak(w, 418)
			}
		}, driver.FailureRetryable, "HTTP status 418"},
		{"create 503", func(w http.ResponseWriter, r *http.Request) {
			if !listEmpty(w, r) {
				leak(w, 503)
			}
		}, driver.FailureRetryable, "503"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := fakeEngine(t, tc.handler, 200*time.Millisecond)
			ns := drivertest.NewNamespace()
			obs, err := d.EnsureNamespace(context.Background(), ns)
			if err != nil {
				t.Fatalf("EnsureNamespace returned an error instead of an observation: %v", err)
			}
			if err := driver.CheckEnsureObservation(ns.ID, obs); err != nil {
				t.Fatal(err)
			}
			if obs.Failure != tc.failure || !strings.Contains(obs.Reason, tc.contain) {
				t.Fatalf("observation = %+v, want failure %q with a reason containing %q", obs, tc.failure, tc.contain)
			}
			if strings.Contains(obs.Reason, secretish) || strings.Contains(obs.Reason, "/var/lib") {
				t.Fatalf("the reason leaks the response body: %q", obs.Reason)
			}
		})
	}

	t.Run("typed transient error from the client", func(t *testing.T) {
		t.Parallel()
		d := fakeEngine(t, func(w http.ResponseWriter, r *http.Request) { leak(w, 502) }, time.Second)
		_, err := d.engine.networksNamed(context.Background(), "x")
		var transient *driver.TransientDependencyError
		if !errors.As(err, &transient) || transient.Dependency != driver.DependencyDocker ||
			transient.Code != driver.CodeDockerEngineUnavailable || transient.Status != 502 || transient.Reason != driver.TransientUnavailable {
			t.Fatalf("error = %#v", err)
		}
		if strings.Contains(err.Error(), secretish) {
			t.Fatalf("the error leaks the response body: %v", err)
		}
	})

	t.Run("unreachable engine", func(t *testing.T) {
		t.Parallel()
		d, err := New("compute-docker-test", Config{Socket: filepath.Join(shortTempDir(t), "none.sock")})
		if err != nil {
			t.Fatal(err)
		}
		ns := drivertest.NewNamespace()
		obs, err := d.DeleteNamespace(context.Background(), ns)
		if err != nil || obs.Failure != driver.FailureRetryable || !strings.Contains(obs.Reason, "unreachable") {
			t.Fatalf("delete against a missing socket = %+v, %v", obs, err)
		}
	})

	t.Run("caller cancellation wins over the request timeout", func(t *testing.T) {
		t.Parallel()
		d := fakeEngine(t, stall, time.Minute)
		ns := drivertest.NewNamespace()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := d.EnsureNamespace(ctx, ns)
			done <- err
		}()
		cancel()
		timer := time.NewTimer(10 * time.Second)
		defer timer.Stop()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("EnsureNamespace = %v, want context.Canceled", err)
			}
		case <-timer.C:
			t.Fatal("EnsureNamespace did not return after cancellation")
		}
	})
}

// fakeNetworks is a tiny in-memory engine for the create paths: it can lose a create race (409)
// and hold duplicate names like engines without duplicate-name checks.
type fakeNetworks struct {
	mu       sync.Mutex
	nets     []network
	conflict bool // answer the next create with 409 after creating the network as "someone else"
	deleted  []string
	seq      atomic.Int64
}

func (f *fakeNetworks) add(name string, labels map[string]string) string {
	id := strings.Repeat("0", 10) + string(rune('a'+f.seq.Add(1)))
	f.nets = append(f.nets, network{ID: id, Name: name, Labels: labels})
	return id
}

func (f *fakeNetworks) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/networks":
		writeJSON(w, http.StatusOK, f.nets)
	case r.Method == http.MethodPost && r.URL.Path == "/networks/create":
		var body struct {
			Name   string
			Labels map[string]string
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		id := f.add(body.Name, body.Labels)
		if f.conflict {
			f.conflict = false
			writeJSON(w, http.StatusConflict, map[string]string{"message": "exists"})
			return
		}
		writeJSON(w, http.StatusCreated, map[string]string{"Id": id})
	case r.Method == http.MethodDelete && strings.HasPrefix(r.URL.Path, "/networks/"):
		id := strings.TrimPrefix(r.URL.Path, "/networks/")
		f.deleted = append(f.deleted, id)
		for i, n := range f.nets {
			if n.ID == id {
				f.nets = append(f.nets[:i], f.nets[i+1:]...)
				w.WriteHeader(http.StatusNoContent)
				return
			}
		}
		w.WriteHeader(http.StatusNotFound)
	default:
		w.WriteHeader(http.StatusNotImplemented)
	}
}

func TestCreateRacesAndDuplicatesConverge(t *testing.T) {
	t.Parallel()
	ns := drivertest.NewNamespace()

	t.Run("lost create race", func(t *testing.T) {
		t.Parallel()
		f := &fakeNetworks{conflict: true}
		d := fakeEngine(t, f.ServeHTTP, time.Second)
		if obs := drivertest.EnsureReady(t, d, ns); obs.Failure != "" {
			t.Fatalf("observation = %+v", obs)
		}
		if len(f.nets) != 1 {
			t.Fatalf("%d networks, want 1", len(f.nets))
		}
	})

	t.Run("duplicate labelled networks", func(t *testing.T) {
		t.Parallel()
		f := &fakeNetworks{}
		keep := f.add(NetworkName(ns.ID), Labels(ns.ID))
		drop := f.add(NetworkName(ns.ID), Labels(ns.ID))
		d := fakeEngine(t, f.ServeHTTP, time.Second)
		drivertest.EnsureReady(t, d, ns)
		f.mu.Lock()
		defer f.mu.Unlock()
		if len(f.deleted) == 0 || f.deleted[0] != drop || len(f.nets) > 1 {
			t.Fatalf("deleted %v, left %v; want %s removed and %s kept", f.deleted, f.nets, drop, keep)
		}
	})
}

func TestConfiguration(t *testing.T) {
	t.Parallel()
	env := func(m map[string]string) driver.Environment {
		return driver.Environment{LookupEnv: func(k string) (string, bool) { v, ok := m[k]; return v, ok }}
	}
	cases := []struct {
		name    string
		cfg     map[string]any
		env     driver.Environment
		socket  string
		timeout time.Duration
		detail  string // expected detail path, "" for success
	}{
		{"defaults", map[string]any{}, driver.Environment{}, "", 0, ""},
		{"socket", map[string]any{"socket": "/run/docker.sock", "requestTimeoutMs": 2500}, driver.Environment{}, "/run/docker.sock", 2500 * time.Millisecond, ""},
		{"DOCKER_HOST", map[string]any{}, env(map[string]string{"DOCKER_HOST": "unix:///run/user/1000/docker.sock"}), "/run/user/1000/docker.sock", 0, ""},
		{"socket wins over DOCKER_HOST", map[string]any{"socket": "/a.sock"}, env(map[string]string{"DOCKER_HOST": "tcp://1.2.3.4:2375"}), "/a.sock", 0, ""},
		{"tcp DOCKER_HOST", map[string]any{}, env(map[string]string{"DOCKER_HOST": "tcp://1.2.3.4:2375"}), "", 0, "/socket"},
		{"relative socket", map[string]any{"socket": "docker.sock"}, driver.Environment{}, "", 0, "/socket"},
		{"unclean socket", map[string]any{"socket": "/var/run/../docker.sock"}, driver.Environment{}, "", 0, "/socket"},
		{"long socket", map[string]any{"socket": "/" + strings.Repeat("s", 200)}, driver.Environment{}, "", 0, "/socket"},
		{"timeout too small", map[string]any{"requestTimeoutMs": 1}, driver.Environment{}, "", 0, "/requestTimeoutMs"},
		{"unknown key", map[string]any{"host": secretish}, driver.Environment{}, "", 0, "/host"},
	}
	for _, tc := range cases {
		cfg, err := ParseConfig(tc.cfg, tc.env)
		if tc.detail == "" {
			if err != nil || cfg.Socket != tc.socket || cfg.RequestTimeout != tc.timeout {
				t.Errorf("%s: ParseConfig = %+v, %v", tc.name, cfg, err)
			}
			continue
		}
		var ce *driver.ConfigurationError
		if !errors.As(err, &ce) || ce.Details[0].Path != tc.detail || strings.Contains(err.Error(), secretish) {
			t.Errorf("%s: ParseConfig error = %v, want a detail at %s", tc.name, err, tc.detail)
		}
	}

	registry, err := driver.NewComputeRegistry(Implementation())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := registry.NewCompute(Name, DefaultID, map[string]any{}, driver.Environment{Production: true}); driver.Code(err) != driver.CodeDriverUnavailableInProduction {
		t.Fatalf("docker in production: %v", err)
	}
	if _, err := Factory(DefaultID, map[string]any{}, driver.Environment{Production: true}); driver.Code(err) != driver.CodeDriverUnavailableInProduction {
		t.Fatalf("Factory in production: %v", err)
	}
	c, err := registry.NewCompute(Name, DefaultID, nil, driver.Environment{})
	if err != nil || c.ID() != DefaultID || c.Implementation() != Name {
		t.Fatalf("NewCompute(docker) = %v, %v", c, err)
	}
	if _, err := New("x", Config{ExtraLabels: map[string]string{LabelManaged: "false"}}); err == nil {
		t.Fatal("an extra label shadowing an ownership label was accepted")
	}
}
