package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"

	"github.com/openclaw/occ/internal/bootstrap"
	"github.com/openclaw/occ/internal/devstack"
	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/problem"
	"github.com/openclaw/occ/internal/settings"
	"github.com/openclaw/occ/internal/store"
)

// Compute choices of occ dev.
const (
	devComputeAuto       = "auto"
	devComputeDocker     = "docker"
	devComputeSimulated  = "simulated"
	devComputeKubernetes = "kubernetes"
	// devComputeConfigPath: OCC_CONFIG_PATH selected the drivers.
	devComputeConfigPath = "config-path"
)

type devOptions struct {
	port     int
	stateDir string
	compute  string
	reset    bool
	// kubernetes: the cluster (kubeconfig file and exact context) and the workload images
	kubeconfig, context      string
	gatewayImage, agentImage string
}

func newDevCommand(env Env) *cobra.Command {
	var o devOptions
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run a complete local OCC (PostgreSQL, migrate, bootstrap, API and worker) with one command",
		Long: `Runs OCC locally for development. Without OCC_DATABASE_URL it starts a private PostgreSQL from
the machine's server binaries, with its data in the state directory (--state-dir; default
$XDG_STATE_HOME/occ/dev, else ~/.local/state/occ/dev, and /var/lib/occ/dev for root, whose
PostgreSQL runs as the postgres user). It creates the roles, migrates, bootstraps in development
mode (the service key file is written once into the state directory), then runs occ api and
occ worker as child processes with prefixed logs. Ctrl-C or SIGTERM stops the API and the worker,
then PostgreSQL. A rerun reuses the data and the key file; --reset starts over.

Compute: --compute auto (default) selects the simulated Compute Driver (Namespaces and Agents are
simulated: deployments succeed, no Agent process runs), or, when OCC_CONFIG_PATH is set, that
startup YAML. --compute docker gives every Namespace a Docker network (it cannot deploy Agents).
--compute kubernetes deploys to an existing cluster (kind, minikube, a test cluster): it needs
--kubeconfig and --context (nothing ambient is used) and the images --gateway-image and
--agent-image, which the cluster must be able to pull; Secrets then live in the cluster too.

The bootstrap key is checked at every start: when it was revoked or has expired, occ dev issues a
fresh development key into the same file and says so. The client context dev (occ config) is
written with the URL and the key file, and becomes current when no other context is.
--reset first removes what the old Installation's Compute made (Docker networks, Kubernetes
namespaces), or prints the command that does.

With OCC_DATABASE_URL set, that server is used: occ dev migrates it only when
OCC_MIGRATION_DATABASE_URL is also set, and bootstraps it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDev(cmd.Context(), env, o)
		},
	}
	cmd.Flags().IntVar(&o.port, "port", 3000, "loopback port of the API")
	cmd.Flags().StringVar(&o.stateDir, "state-dir", "", "state directory (PostgreSQL data, service key file, startup YAML)")
	cmd.Flags().StringVar(&o.compute, "compute", devComputeAuto, "Compute Driver: auto (simulated, or OCC_CONFIG_PATH when set), docker, simulated or kubernetes")
	cmd.Flags().StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file of the cluster (--compute kubernetes)")
	cmd.Flags().StringVar(&o.context, "context", "", "exact kubeconfig context to use (--compute kubernetes)")
	cmd.Flags().StringVar(&o.gatewayImage, "gateway-image", "", "image of the Agent gateway (--compute kubernetes)")
	cmd.Flags().StringVar(&o.agentImage, "agent-image", "", "image of the dedicated Harness (--compute kubernetes)")
	cmd.Flags().BoolVar(&o.reset, "reset", false, "delete the state directory's contents (all local data) before starting")
	_ = cmd.RegisterFlagCompletionFunc("compute", fixedCompletion(devComputeAuto, devComputeDocker, devComputeSimulated, devComputeKubernetes))
	return cmd
}

// devRun is one occ dev invocation.
type devRun struct {
	ctx    context.Context
	env    Env
	o      devOptions
	out    *devstack.Output
	errOut *devstack.Output
	// compute is the Compute Driver selected (devCompute*); reset reads it back next time.
	compute string
	context devContext
}

func (d *devRun) step(format string, args ...any) {
	d.out.Println("==> " + fmt.Sprintf(format, args...))
}
func (d *devRun) info(format string, args ...any) {
	d.out.Println("    " + fmt.Sprintf(format, args...))
}

func (d *devRun) fail(format string, args ...any) error {
	if d.ctx.Err() != nil {
		d.errOut.Println("occ dev: interrupted")
		return exitError{Code: 1}
	}
	d.errOut.Println("occ dev: " + fmt.Sprintf(format, args...))
	return exitError{Code: 1}
}

// runDev is `occ dev` from start to Ctrl-C: state directory, PostgreSQL, migrations, bootstrap,
// Compute selection, then the API and worker processes. Its complexity (43) is one early exit per
// step; the steps run in a fixed order over one devRun and print as they go, so they read best as
// one sequence rather than split across helpers that would each return to it.
func runDev(ctx context.Context, env Env, o devOptions) error {
	d := &devRun{ctx: ctx, env: env, o: o, out: devstack.NewOutput(env.Stdout), errOut: devstack.NewOutput(env.Stderr)}
	if o.port < 1 || o.port > 65535 {
		return d.fail("--port must be between 1 and 65535.")
	}
	switch o.compute {
	case devComputeAuto, devComputeDocker, devComputeSimulated:
		if o.kubeconfig != "" || o.context != "" || o.gatewayImage != "" || o.agentImage != "" {
			return d.fail("--kubeconfig, --context, --gateway-image and --agent-image apply only to --compute kubernetes.")
		}
	case devComputeKubernetes:
		if o.kubeconfig == "" || o.context == "" || o.gatewayImage == "" || o.agentImage == "" {
			return d.fail("--compute kubernetes needs --kubeconfig, --context, --gateway-image and --agent-image.")
		}
		abs, err := filepath.Abs(o.kubeconfig)
		if err != nil {
			return d.fail("--kubeconfig: %v", err)
		}
		d.o.kubeconfig = abs
	default:
		return d.fail("--compute must be auto, docker, simulated or kubernetes.")
	}
	self, err := os.Executable()
	if err != nil {
		return d.fail("cannot find the occ executable: %v", err)
	}

	stateDir := o.stateDir
	if stateDir == "" {
		if stateDir, err = devstack.DefaultStateDir(env.Lookup); err != nil {
			return d.fail("%v", err)
		}
	}
	if stateDir, err = filepath.Abs(stateDir); err != nil {
		return d.fail("%v", err)
	}
	externalURL, external := env.Lookup("OCC_DATABASE_URL")
	external = external && externalURL != ""

	var bin string
	var cred *syscall.Credential
	if !external {
		if bin, err = devstack.FindBinaries(); err != nil {
			return d.fail("%v", err)
		}
		if cred, err = devstack.ServerUser(); err != nil {
			return d.fail("%v", err)
		}
		if err := devstack.CheckReachable(filepath.Dir(stateDir), cred); err != nil {
			return d.fail("%v", err)
		}
	}
	// The lock comes before the port: a second occ dev on the same state directory is told about
	// the first one, not about the port the first one holds.
	state, err := devstack.OpenState(stateDir, cred != nil)
	if errors.Is(err, devstack.ErrLocked) {
		owner := devstack.LockOwner(stateDir)
		if owner != "" {
			owner = " (" + owner + ")"
		}
		return d.fail("another occ dev is already running with the state directory %s%s. Stop it with Ctrl-C in its terminal, or use another --state-dir.", stateDir, owner)
	} else if err != nil {
		return d.fail("cannot prepare the state directory %s: %v", stateDir, err)
	}
	defer state.Close()
	if err := portFree(o.port); err != nil {
		return d.fail("port %d on 127.0.0.1 is taken (%v). Stop what uses it or choose another with --port.", o.port, err)
	}
	baseURL := fmt.Sprintf("http://127.0.0.1:%d", o.port)
	_ = state.SetOwner(fmt.Sprintf("process %d, API %s", os.Getpid(), baseURL))
	d.step("State directory %s", state.Dir)
	if o.reset {
		if !external {
			d.resetCompute(ctx, state, bin, cred)
		}
		if err := state.Reset(); err != nil {
			return d.fail("--reset: %v", err)
		}
		d.info("reset: removed all local data")
	}

	appURL := externalURL
	if !external {
		pg := &devstack.Postgres{Dir: state.PostgresDir(), Bin: bin, Cred: cred}
		first := !pg.Initialized()
		creds, err := devstack.LoadOrCreateCredentials(state.CredentialsFile(), first)
		if err != nil {
			return d.fail("%v", err)
		}
		if first {
			d.step("PostgreSQL %s: creating a new cluster in %s", pg.Version(), pg.DataDir())
		} else {
			d.step("PostgreSQL %s: reusing the cluster in %s", pg.Version(), pg.DataDir())
		}
		if err := pg.Prepare(ctx, creds.Superuser); err != nil {
			return d.fail("%v", err)
		}
		if err := pg.Start(ctx, creds.Superuser); err != nil {
			return d.fail("PostgreSQL did not start: %v", err)
		}
		defer func() {
			d.step("Stopping PostgreSQL")
			pg.Stop()
			d.step("Stopped")
		}()
		d.info("listening on 127.0.0.1:%d (log: %s, passwords: %s)", pg.Port, filepath.Join(pg.Dir, "postgres.log"), state.CredentialsFile())
		if err := pg.EnsureRolesAndDatabase(ctx, creds); err != nil {
			return d.fail("cannot create the roles and the database: %v", err)
		}
		d.info("roles %s (owner) and %s (application), database %s", devstack.MigratorRole, devstack.AppRole, devstack.DatabaseName)
		if err := d.migrate(ctx, pg.URL(devstack.MigratorRole, creds.Migrator, devstack.DatabaseName), devstack.AppRole); err != nil {
			return err
		}
		appURL = pg.URL(devstack.AppRole, creds.App, devstack.DatabaseName)
	} else {
		d.step("PostgreSQL: using OCC_DATABASE_URL")
		if _, ok := env.Lookup("OCC_MIGRATION_DATABASE_URL"); ok {
			cfg, err := settings.LoadMigration(env.Lookup)
			if err != nil {
				return d.fail("%v", err)
			}
			if err := d.migrate(ctx, cfg.DatabaseURL, cfg.AppRole); err != nil {
				return err
			}
		} else {
			d.step("Migrate: skipped (OCC_MIGRATION_DATABASE_URL is not set)")
		}
	}

	if err := d.bootstrap(ctx, appURL, state.ServiceKeyFile(), baseURL); err != nil {
		return err
	}

	childEnv := map[string]string{
		"NODE_ENV": "development", "OCC_HOST": "127.0.0.1", "OCC_PORT": strconv.Itoa(o.port),
		"OCC_DATABASE_URL": appURL, "OCC_AUTH_BASE_URL": baseURL,
		"OCC_DEVELOPMENT_CONFIGURATION_ROOT": state.ConfigurationRoot(),
		"OCC_DEVELOPMENT_SECRET_ROOT":        state.SecretRoot(),
	}
	if err := d.selectCompute(ctx, state, childEnv); err != nil {
		return err
	}
	if err := os.WriteFile(state.ComputeFile(), []byte(d.compute+"\n"), 0o600); err != nil {
		return d.fail("cannot write %s: %v", state.ComputeFile(), err)
	}
	d.context.path, d.context.current, d.context.err = writeDevContext(env, baseURL, state.ServiceKeyFile(), o.reset)
	return d.serve(ctx, self, childEnv, baseURL, state.ServiceKeyFile())
}

func portFree(port int) error {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return errors.Unwrap(err)
	}
	return l.Close()
}

func (d *devRun) migrate(ctx context.Context, url, appRole string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return d.fail("cannot connect as the migration owner: %v", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	result, err := store.Migrate(ctx, conn, appRole, func(m store.Migration) { d.info("applied %s", m.Name) })
	if err != nil {
		var me *store.MigrationError
		if errors.As(err, &me) {
			return d.fail("migration failed: %s %s", me.Code, me.Message)
		}
		return d.fail("migration failed: %v", err)
	}
	if len(result.Applied) == 0 {
		d.step("Migrate: the schema is up to date")
	} else {
		d.step("Migrate: applied %d migrations", len(result.Applied))
	}
	return nil
}

func (d *devRun) bootstrap(ctx context.Context, appURL, keyFile, baseURL string) error {
	vars := map[string]string{"NODE_ENV": "development", "OCC_DATABASE_URL": appURL,
		"OCC_BOOTSTRAP_SERVICE_KEY_FILE": keyFile, "OCC_AUTH_BASE_URL": baseURL}
	for _, name := range []string{"OCC_AUTH_SECRET", "OPENCLAW_DEV_EMAIL", "OPENCLAW_DEV_PASSWORD", "OPENCLAW_DEV_INSTALLATION_NAME"} {
		if v, ok := d.env.Lookup(name); ok {
			vars[name] = v
		}
	}
	cfg, err := settings.LoadBootstrap(settings.MapLookup(vars))
	if err != nil {
		var se *problem.Error
		if errors.As(err, &se) {
			return d.fail("bootstrap settings: %s %s", se.Code, se.Message)
		}
		return d.fail("bootstrap settings: %v", err)
	}
	conn, err := pgx.Connect(ctx, appURL)
	if err != nil {
		return d.fail("cannot connect as the application role: %v", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	result, err := bootstrap.Run(ctx, conn, cfg)
	if err != nil {
		var be *bootstrap.Error
		if errors.As(err, &be) {
			hint := ""
			if be.Cause != nil {
				hint = " (" + be.Cause.Error() + ")"
			}
			return d.fail("bootstrap failed: %s %s%s", be.Code, be.Message, hint)
		}
		return d.fail("bootstrap failed: %v", err)
	}
	if result.AlreadyBootstrapped {
		d.step("Bootstrap: Installation %s already exists; reusing it", result.Attempt.InstallationID)
		renewal, err := bootstrap.EnsureDevelopmentKey(ctx, conn, cfg)
		if err != nil {
			var be *bootstrap.Error
			if errors.As(err, &be) {
				return d.fail("the service key in %s cannot be renewed: %s (--reset starts over, deleting all local data)", keyFile, be.Message)
			}
			return d.fail("the service key in %s cannot be checked: %v", keyFile, err)
		}
		if renewal.Reason != "" {
			d.info("%s: issued a fresh development key %s (expires %s) into %s", renewal.Reason, renewal.KeyID, renewal.ExpiresAt, keyFile)
		}
		return nil
	}
	d.step("Bootstrap: created Installation %s, administrator %s, the default Namespace %s",
		result.Attempt.InstallationID, cfg.AdminEmail, result.Attempt.DefaultNamespaceID)
	return nil
}

// computeChoice is what a Compute Driver of occ dev can and cannot do, for the banner.
var computeChoice = map[string]struct{ can, cannot string }{
	devComputeSimulated: {"Namespaces become ready and Agents deploy, simulated (no Agent process runs)",
		"run an Agent for real"},
	devComputeDocker: {"every Namespace gets its own Docker network",
		"deploy Agents (a deploy answers 409 HARNESS_AUTH_UNSUPPORTED)"},
	devComputeKubernetes: {"Namespaces and Agents run on the cluster, Secrets live in it",
		"work without a cluster that can pull the images, or deploy --auth runtime Agents (bind an api_key Secret)"},
}

// otherComputes is the banner's "choose another" sentence.
func otherComputes(current string) string {
	choices := map[string]string{
		devComputeSimulated:  "--compute simulated (the default: simulated Agents)",
		devComputeDocker:     "--compute docker (a Docker network per Namespace, no Agents)",
		devComputeKubernetes: "--compute kubernetes --kubeconfig FILE --context NAME --gateway-image REF --agent-image REF (a cluster)",
	}
	var out []string
	for _, c := range []string{devComputeSimulated, devComputeDocker, devComputeKubernetes} {
		if c != current {
			out = append(out, choices[c])
		}
	}
	return strings.Join(out, " or ")
}

func (d *devRun) selectCompute(ctx context.Context, state *devstack.State, childEnv map[string]string) error {
	if path, ok := d.env.Lookup("OCC_CONFIG_PATH"); ok && path != "" && d.o.compute == devComputeAuto {
		childEnv["OCC_CONFIG_PATH"] = path
		d.compute = devComputeConfigPath
		d.step("Compute: as selected by OCC_CONFIG_PATH (%s)", path)
		return nil
	}
	compute := d.o.compute
	if compute == devComputeKubernetes {
		d.compute = compute
		return d.selectKubernetes(ctx, state, childEnv)
	}
	if compute == devComputeAuto {
		compute = devComputeSimulated
	}
	d.compute = compute
	if compute == devComputeDocker {
		socket, usable := devstack.DockerSocket(d.env.Lookup)
		if !usable || !devstack.DockerAnswers(ctx, socket) {
			return d.fail("--compute docker: no Docker Engine answers at %s (DOCKER_HOST must be unset or unix://).", orDash(socket))
		}
		d.step("Compute: docker (the Docker Engine at %s)", socket)
		return nil // the development defaults select Docker
	}
	d.step("Compute: simulated")
	yaml := fmt.Sprintf(`# Written by occ dev: the simulated Compute Driver. Rewritten on every start.
occ: {cluster: local}
drivers:
  compute: {id: compute-simulated, implementation: simulated, configuration: {}}
  configuration: {id: configuration-filesystem, implementation: filesystem, configuration: {root: %q}}
  iam: {id: native-iam, configuration: {}}
  secret: {id: secret-filesystem, implementation: filesystem, configuration: {root: %q}}
`, state.ConfigurationRoot(), state.SecretRoot())
	path := state.StartupConfigFile()
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		return d.fail("cannot write %s: %v", path, err)
	}
	d.info("startup YAML: %s", path)
	childEnv["OCC_CONFIG_PATH"] = path
	return nil
}

// selectKubernetes writes the startup YAML of --compute kubernetes (Compute and Secrets in the
// cluster, Configurations on the filesystem) and runs the driver's preflight, so that an
// unreachable cluster or an unusable kubeconfig fails here with a sentence instead of in the
// worker.
func (d *devRun) selectKubernetes(ctx context.Context, state *devstack.State, childEnv map[string]string) error {
	auth := fmt.Sprintf("{mode: kubeconfig, kubeconfigPath: %q, context: %q}", d.o.kubeconfig, d.o.context)
	compute := fmt.Sprintf(`
      authentication: %s
      images: {gateway: %q, agent: %q, requireImmutableDigest: false}
      resources:
        gateway: {requests: {cpu: "100m", memory: "256Mi"}, limits: {cpu: "1", memory: "1Gi"}}
        agent: {requests: {cpu: "100m", memory: "256Mi"}, limits: {cpu: "2", memory: "2Gi"}}
        namespace:
          quota: {pods: "20"}
          containerDefaults: {requests: {cpu: "50m", memory: "64Mi"}, limits: {cpu: "500m", memory: "512Mi"}}
      network:
        dns: {namespace: kube-system, podLabels: {k8s-app: kube-dns}}
        gatewayPort: 8080
        gatewayTrustedProxyCidrs: ["10.0.0.0/8"]
        gatewayClients: [{namespace: default, podLabels: {app.kubernetes.io/name: occ-dev-client}}]
      servicePrincipalCredentials: {mode: disabled}`, auth, d.o.gatewayImage, d.o.agentImage)
	yaml := fmt.Sprintf(`# Written by occ dev: the Kubernetes Compute and Secret Drivers. Rewritten on every start.
occ: {cluster: local}
drivers:
  compute:
    id: compute-kubernetes
    implementation: kubernetes
    configuration:%s
  configuration: {id: configuration-filesystem, implementation: filesystem, configuration: {root: %q}}
  iam: {id: native-iam, configuration: {}}
  secret: {id: secret-kubernetes, implementation: kubernetes, configuration: {authentication: %s}}
`, compute, state.ConfigurationRoot(), auth)
	path := state.StartupConfigFile()
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		return d.fail("cannot write %s: %v", path, err)
	}
	_, c, err := startupConfig(d.env.Lookup, settings.Development, path, state.ConfigurationRoot(), state.SecretRoot())
	if err != nil {
		var ie *problem.Error
		if errors.As(err, &ie) && len(ie.Details) > 0 {
			return d.fail("--compute kubernetes: %s (%s at %s)", ie.Message, ie.Details[0].Message, ie.Details[0].Path)
		}
		return d.fail("--compute kubernetes: the startup configuration is invalid: %v", err)
	}
	if p, ok := c.(driver.Preflighter); ok {
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, err := p.Preflight(pctx)
		cancel()
		var pe *driver.PreflightError
		switch {
		case errors.As(err, &pe):
			return d.fail("--compute kubernetes: the cluster at %s:%d refused the preflight (%s).", pe.Host, pe.Port, pe.Code)
		case err != nil:
			return d.fail("--compute kubernetes: the preflight failed (%s).", driver.ErrorClass(err))
		}
	}
	d.step("Compute: kubernetes (context %s of %s; images %s, %s)", d.o.context, d.o.kubeconfig, d.o.gatewayImage, d.o.agentImage)
	d.info("startup YAML: %s", path)
	childEnv["OCC_CONFIG_PATH"] = path
	return nil
}

// devControlled are the variables occ dev sets for its children; inherited values are dropped.
// The metrics listener is dropped as well: API and worker would compete for its port.
func devControlled(name string) bool {
	switch name {
	case "NODE_ENV", "OCC_HOST", "OCC_PORT", "OCC_DATABASE_URL", "OCC_AUTH_BASE_URL", "OCC_CONFIG_PATH",
		"OCC_DEVELOPMENT_CONFIGURATION_ROOT", "OCC_DEVELOPMENT_SECRET_ROOT", "OCC_MIGRATION_DATABASE_URL":
		return true
	}
	return strings.HasPrefix(name, "OCC_METRICS_") || strings.HasPrefix(name, "OCC_BOOTSTRAP_")
}

func (d *devRun) serve(ctx context.Context, self string, vars map[string]string, baseURL, keyFile string) error {
	var childEnv []string
	for _, kv := range os.Environ() { // the children inherit the developer's environment
		name, _, _ := strings.Cut(kv, "=")
		if !devControlled(name) {
			childEnv = append(childEnv, kv)
		}
	}
	for k, v := range vars {
		childEnv = append(childEnv, k+"="+v)
	}
	d.step("Starting occ api on %s and occ worker", baseURL)
	api, err := devstack.StartChild("api", self, []string{"api"}, childEnv, d.out, d.errOut)
	if err != nil {
		return d.fail("cannot start occ api: %v", err)
	}
	worker, err := devstack.StartChild("worker", self, []string{"worker"}, childEnv, d.out, d.errOut)
	if err != nil {
		api.Stop(15 * time.Second)
		return d.fail("cannot start occ worker: %v", err)
	}
	stop := func() {
		d.step("Stopping occ api and occ worker")
		var wg sync.WaitGroup
		for _, c := range []*devstack.Child{api, worker} {
			wg.Go(func() {
				if c.Stop(15 * time.Second) {
					d.info("%s did not stop within 15 s and was killed", c.Name)
				}
			})
		}
		wg.Wait()
	}

	if err := d.waitReady(ctx, baseURL, api, worker); err != nil {
		stop()
		if ctx.Err() != nil {
			return exitError{Code: 1}
		}
		return d.fail("%v", err)
	}
	d.banner(baseURL, keyFile, self)
	select {
	case <-ctx.Done():
		stop()
		for _, c := range []*devstack.Child{api, worker} {
			if code := c.ExitCode(); code != 0 {
				d.errOut.Println(fmt.Sprintf("occ dev: occ %s exited with status %d while stopping.", c.Name, code))
				return exitError{Code: 1}
			}
		}
		return nil
	case <-api.Done():
		stop()
		return d.fail("occ api exited with status %d; stopping.", api.ExitCode())
	case <-worker.Done():
		stop()
		return d.fail("occ worker exited with status %d; stopping.", worker.ExitCode())
	}
}

// waitReady polls GET /readyz until it answers 200, a child exits, or a minute passes.
func (d *devRun) waitReady(ctx context.Context, baseURL string, children ...*devstack.Child) error {
	client := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(time.Minute)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, baseURL+"/readyz", nil)
		if res, err := client.Do(req); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		for _, c := range children {
			select {
			case <-c.Done():
				return fmt.Errorf("occ %s exited with status %d during startup (see its lines above)", c.Name, c.ExitCode())
			default:
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline:
			return errors.New("the API did not become ready within a minute")
		case <-tick.C:
		}
	}
}
