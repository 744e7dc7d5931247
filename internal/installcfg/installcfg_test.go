package installcfg

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/openclaw/occ/internal/problem"
)

// specExample is the startup YAML example of docs/settings.md.
const specExample = `
occ: {cluster: local}
drivers:
  configuration: {id: configuration-filesystem, implementation: filesystem, configuration: {root: /var/lib/occ/configurations}}
  iam: {id: native-iam, configuration: {}}
  compute: {id: compute-simulated, implementation: simulated, configuration: {}}
  secret: {id: secret-filesystem, implementation: filesystem, configuration: {root: /var/lib/occ/secrets}}
`

// production is a minimal valid production document (Kubernetes everywhere but IAM).
const production = `
occ:
  cluster: production-west
drivers:
  configuration: {id: config-kubernetes, configuration: {authentication: {mode: inCluster}}}
  iam: {id: native-iam, configuration: {}}
  compute: {id: compute-kubernetes, configuration: {authentication: {mode: inCluster}}}
  secret: {id: secret-kubernetes, configuration: {authentication: {mode: inCluster}}}
`

// withCompute is specExample with another compute configuration.
func withCompute(configuration string) string {
	return strings.Replace(specExample, "implementation: simulated, configuration: {}}", "implementation: simulated, configuration: "+configuration+"}", 1)
}

// emptyOnly accepts only {}; a stand-in for the driver registry's validators.
func emptyOnly(c map[string]any) []problem.Detail {
	var out []problem.Detail
	for _, k := range sortedKeys(c) {
		p, _ := child("", k)
		out = append(out, problem.Detail{Path: p, Code: problem.DetailUnknownField, Message: "Unsupported option."})
	}
	return out
}

// authOnly accepts {authentication: {mode: inCluster}}.
func authOnly(c map[string]any) []problem.Detail {
	a, ok := c["authentication"].(map[string]any)
	if len(c) != 1 || !ok || len(a) != 1 || a["mode"] != "inCluster" {
		return []problem.Detail{{Path: "/authentication", Code: problem.DetailInvalidValue, Message: "Only inCluster is accepted here."}}
	}
	return nil
}

func allValidators() []Option {
	return []Option{
		WithValidator(CapabilityCompute, ImplementationSimulated, emptyOnly),
		WithValidator(CapabilityCompute, ImplementationDocker, emptyOnly),
		WithValidator(CapabilityCompute, ImplementationKubernetes, authOnly),
		WithValidator(CapabilityConfiguration, ImplementationKubernetes, authOnly),
		WithValidator(CapabilitySecret, ImplementationKubernetes, authOnly),
	}
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "installation.yaml")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// checkSafe asserts the invariants every Error keeps, and that none of secrets appears in it.
func checkSafe(t testing.TB, err *problem.Error, secrets ...string) {
	t.Helper()
	if len(err.Details) > problem.MaxDetails {
		t.Errorf("%d details", len(err.Details))
	}
	if !safeMessage.MatchString(err.Message) {
		t.Errorf("unsafe message %q", err.Message)
	}
	for _, d := range err.Details {
		if !safeMessage.MatchString(d.Message) || credentialLike(d.Message) {
			t.Errorf("unsafe detail message %q", d.Message)
		}
		if !detailCode.MatchString(d.Code) {
			t.Errorf("bad detail code %q", d.Code)
		}
		if !strings.HasPrefix(d.Path, "/env/") && !safePath(d.Path) {
			t.Errorf("unsafe detail path %q", d.Path)
		}
	}
	text := err.Error() + fmt.Sprintf("%+v %#v", *err, err.Details)
	if credentialLike(text) {
		t.Errorf("error looks like it carries a credential: %s", text)
	}
	for _, s := range secrets {
		if strings.Contains(text, s) {
			t.Errorf("error echoes %q: %s", s, text)
		}
	}
}

func asError(t testing.TB, err error) *problem.Error {
	t.Helper()
	var e *problem.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not an *problem.Error", err, err)
	}
	return e
}

func TestLoadRefusals(t *testing.T) {
	t.Parallel()
	const sk = "sk-proj-abcdefghijklmnopqrstuvwxyz0123"
	const ghp = "ghp_abcdefghijklmnopqrstuvwxyz"
	tests := []struct {
		name    string
		doc     string
		env     Env
		opts    []Option // defaults to allValidators()
		code    string
		details []problem.Detail // compared on Path and Code; nil: only the code is checked
		secrets []string
	}{
		{
			name:    "unknown field in occ",
			doc:     strings.Replace(specExample, "occ: {cluster: local}", "occ: {cluster: local, region: west}", 1),
			code:    CodeDriverConfigurationInvalid,
			details: []problem.Detail{{Path: "/occ/region", Code: problem.DetailUnknownField}},
		},
		{
			name:    "unknown field in a driver configuration",
			doc:     strings.Replace(specExample, "{root: /var/lib/occ/secrets}", "{root: /var/lib/occ/secrets, mode: strict}", 1),
			code:    CodeDriverConfigurationInvalid,
			details: []problem.Detail{{Path: "/drivers/secret/configuration/mode", Code: problem.DetailUnknownField}},
		},
		{
			name:    "unknown field escaped in its pointer",
			doc:     strings.Replace(specExample, "compute-simulated, implementation: simulated, configuration: {}", `compute-simulated, implementation: simulated, configuration: {"a/b~c": 1}`, 1),
			code:    CodeDriverConfigurationInvalid,
			details: []problem.Detail{{Path: "/drivers/compute/configuration/a~1b~0c", Code: problem.DetailUnknownField}},
		},
		{
			name:    "unknown top-level section",
			doc:     specExample + "extras: {}\n",
			code:    CodeDriverConfigurationInvalid,
			details: []problem.Detail{{Path: "/extras", Code: problem.DetailUnknownField}},
		},
		{
			name: "plaintext sk- value",
			doc: strings.Replace(specExample, "compute-simulated, implementation: simulated, configuration: {}",
				"compute-simulated, implementation: simulated, configuration: {note: "+sk+"}", 1),
			code:    CodeDriverConfigurationInvalid,
			details: []problem.Detail{{Path: "/drivers/compute/configuration/note", Code: problem.DetailInvalidValue}},
			secrets: []string{sk, "abcdefghijklmnop"},
		},
		{
			name:    "plaintext value wins over the schema: nothing else is reported",
			doc:     "nonsense: [1, {deep: 'Bearer abc.def'}]\n",
			code:    CodeDriverConfigurationInvalid,
			details: []problem.Detail{{Path: "/nonsense/1/deep", Code: problem.DetailInvalidValue}},
			secrets: []string{"abc.def"},
		},
		{
			name:    "credential-named key holding a string",
			doc:     withCompute("{clientSecret: hunter2hunter2}"),
			code:    CodeDriverConfigurationInvalid,
			details: []problem.Detail{{Path: "/drivers/compute/configuration/clientSecret", Code: problem.DetailInvalidValue}},
			secrets: []string{"hunter2"},
		},
		{
			name:    "credential-looking key is reported at its parent",
			doc:     withCompute("{" + ghp + ": 1}"),
			code:    CodeDriverConfigurationInvalid,
			details: []problem.Detail{{Path: "/drivers/compute/configuration", Code: problem.DetailInvalidValue}},
			secrets: []string{ghp, "abcdefghijkl"},
		},
		{
			name:    "unsafe integer",
			doc:     withCompute("{replicas: 9007199254740992}"),
			code:    CodeDriverConfigurationInvalid,
			details: []problem.Detail{{Path: "/drivers/compute/configuration/replicas", Code: problem.DetailInvalidValue}},
			secrets: []string{"9007199254740992"},
		},
		{
			name:    "unsafe integer spelled as a float",
			doc:     specExample + "logging: {level: info, x: 1.0e+300}\n",
			code:    CodeDriverConfigurationInvalid,
			details: []problem.Detail{{Path: "/logging/x", Code: problem.DetailInvalidValue}},
		},
		{
			name: "installationId, prototype keys and secretRef",
			doc:  withCompute("{installationId: ins_x, __proto__: {}, nested: [{secretRef: {name: a}}]}"),
			code: CodeDriverConfigurationInvalid,
			details: []problem.Detail{
				{Path: "/drivers/compute/configuration/__proto__", Code: problem.DetailInvalidValue},
				{Path: "/drivers/compute/configuration/installationId", Code: problem.DetailInvalidValue},
				{Path: "/drivers/compute/configuration/nested/0/secretRef", Code: problem.DetailInvalidValue},
			},
		},
		{
			name:    "unknown implementation",
			doc:     strings.Replace(specExample, "implementation: simulated", "implementation: ssh", 1),
			code:    CodeDriverConfigurationInvalid,
			details: []problem.Detail{{Path: "/drivers/compute/implementation", Code: problem.DetailInvalidValue}},
		},
		{
			name:    "implementation of another capability",
			doc:     strings.Replace(specExample, "{id: native-iam, configuration: {}}", "{id: native-iam, implementation: filesystem, configuration: {}}", 1),
			code:    CodeDriverConfigurationInvalid,
			details: []problem.Detail{{Path: "/drivers/iam/implementation", Code: problem.DetailInvalidValue}},
		},
		{
			name:    "implementation without a registered validator fails closed",
			doc:     production,
			opts:    []Option{WithValidator(CapabilityConfiguration, ImplementationKubernetes, authOnly), WithValidator(CapabilitySecret, ImplementationKubernetes, authOnly)},
			code:    CodeDriverConfigurationInvalid,
			details: []problem.Detail{{Path: "/drivers/compute/implementation", Code: problem.DetailInvalidValue}},
		},
		{
			name:    "simulated in production",
			doc:     strings.Replace(production, "{id: compute-kubernetes, configuration: {authentication: {mode: inCluster}}}", "{id: compute-simulated, implementation: simulated, configuration: {}}", 1),
			env:     Env{Production: true},
			code:    CodeDriverConfigurationInvalid,
			details: []problem.Detail{{Path: "/drivers/compute/implementation", Code: problem.DetailInvalidValue}},
		},
		{
			name:    "docker in production",
			doc:     strings.Replace(production, "{id: compute-kubernetes, configuration: {authentication: {mode: inCluster}}}", "{id: compute-docker, implementation: docker, configuration: {}}", 1),
			env:     Env{Production: true},
			code:    CodeDriverConfigurationInvalid,
			details: []problem.Detail{{Path: "/drivers/compute/implementation", Code: problem.DetailInvalidValue}},
		},
		{
			name:    "filesystem secrets in production",
			doc:     strings.Replace(production, "{id: secret-kubernetes, configuration: {authentication: {mode: inCluster}}}", "{id: secret-filesystem, implementation: filesystem, configuration: {root: /srv/secrets}}", 1),
			env:     Env{Production: true},
			code:    CodeDriverConfigurationInvalid,
			details: []problem.Detail{{Path: "/drivers/secret/implementation", Code: problem.DetailInvalidValue}},
		},
		{
			name:    "validator details are placed below the configuration",
			doc:     strings.Replace(production, "compute: {id: compute-kubernetes, configuration: {authentication: {mode: inCluster}}}", "compute: {id: compute-kubernetes, configuration: {authentication: {mode: kubeconfig}}}", 1),
			code:    CodeDriverConfigurationInvalid,
			details: []problem.Detail{{Path: "/drivers/compute/configuration/authentication", Code: problem.DetailInvalidValue}},
		},
		{
			name: "selection shape",
			doc: `
occ: {cluster: ""}
drivers:
  compute: {id: "bad id", package: "@acme/compute", configuration: []}
  configuration: {implementation: 7, configuration: {}}
  iam: native
  plugin: {id: codex-plugin, configuration: {}}
`,
			code: CodeDriverConfigurationInvalid,
			details: []problem.Detail{
				{Path: "/drivers/plugin", Code: problem.DetailUnknownField},
				{Path: "/drivers/compute/package", Code: problem.DetailUnknownField},
				{Path: "/drivers/compute/id", Code: problem.DetailInvalidFormat},
				{Path: "/drivers/compute/configuration", Code: problem.DetailInvalidType},
				{Path: "/drivers/configuration/id", Code: problem.DetailRequired},
				{Path: "/drivers/configuration/implementation", Code: problem.DetailInvalidType},
				{Path: "/drivers/iam", Code: problem.DetailInvalidType},
				{Path: "/drivers/secret", Code: problem.DetailRequired},
				{Path: "/occ/cluster", Code: problem.DetailInvalidValue},
			},
		},
		{
			name:    "occ and drivers are required",
			doc:     "logging: {level: warn}\n",
			env:     Env{Production: true},
			code:    CodeDriverConfigurationInvalid,
			details: []problem.Detail{{Path: "/occ", Code: problem.DetailRequired}, {Path: "/drivers", Code: problem.DetailRequired}},
		},
		{
			name: "unsupported upstream sections",
			doc:  specExample + "runtime: {nativeWorkerSupport: custom-image}\nintegrations: {}\nbackend: [{id: x}]\n",
			code: CodeDriverConfigurationInvalid,
			details: []problem.Detail{
				{Path: "/backend", Code: problem.DetailInvalidValue},
				{Path: "/integrations", Code: problem.DetailUnknownField},
				{Path: "/runtime", Code: problem.DetailUnknownField},
			},
		},
		{
			name:    "log level and observability url",
			doc:     specExample + "logging: {level: trace}\nobservability: {url: 'https://user@grafana.example.com/d'}\n",
			code:    CodeDriverConfigurationInvalid,
			details: []problem.Detail{{Path: "/logging/level", Code: problem.DetailInvalidValue}, {Path: "/observability/url", Code: problem.DetailInvalidFormat}},
		},
		{
			name:    "filesystem root must be absolute and clean",
			doc:     strings.Replace(specExample, "{root: /var/lib/occ/secrets}", "{root: var/lib/../secrets}", 1),
			code:    CodeDriverConfigurationInvalid,
			details: []problem.Detail{{Path: "/drivers/secret/configuration/root", Code: problem.DetailInvalidValue}},
		},
		{
			name:    "filesystem root is required without a development root",
			doc:     strings.Replace(specExample, "{root: /var/lib/occ/configurations}", "{}", 1),
			code:    CodeDriverConfigurationInvalid,
			details: []problem.Detail{{Path: "/drivers/configuration/configuration/root", Code: problem.DetailRequired}},
		},
		{
			name:    "native iam takes only an empty configuration",
			doc:     strings.Replace(specExample, "{id: native-iam, configuration: {}}", "{id: native-iam, configuration: {cache: 5}}", 1),
			code:    CodeDriverConfigurationInvalid,
			details: []problem.Detail{{Path: "/drivers/iam/configuration/cache", Code: problem.DetailUnknownField}},
		},
		{
			name:    "too deep",
			doc:     specExample + "logging: " + strings.Repeat("[", 40) + strings.Repeat("]", 40) + "\n",
			code:    CodeDriverConfigurationInvalid,
			details: []problem.Detail{{Path: "/logging" + strings.Repeat("/0", 31), Code: problem.DetailTooDeep}},
		},
		{name: "bad YAML", doc: "occ: {cluster: [\n", code: CodeInvalid},
		{name: "YAML with a tab indentation error", doc: "occ:\n\tcluster: a\n", code: CodeInvalid},
		{name: "duplicate keys", doc: specExample + "occ: {cluster: other}\n", code: CodeInvalid},
		{name: "two documents", doc: specExample + "---\noccx: 1\n", code: CodeInvalid},
		{name: "content after the end marker", doc: specExample + "...\nocc: 1\n", code: CodeInvalid},
		{name: "a list at the root", doc: "- occ\n- drivers\n", code: CodeInvalid},
		{name: "a scalar at the root", doc: "just text\n", code: CodeInvalid},
		{name: "empty document", doc: "# nothing here\n", code: CodeInvalid},
		{name: "NaN is not JSON", doc: specExample + "logging: {x: .nan}\n", code: CodeInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			opts := tc.opts
			if opts == nil {
				opts = allValidators()
			}
			_, err := Load(writeFile(t, tc.doc), tc.env, opts...)
			if err == nil {
				t.Fatal("loaded")
			}
			e := asError(t, err)
			if e.Code != tc.code {
				t.Fatalf("code %s, want %s (%v)", e.Code, tc.code, e)
			}
			if tc.details != nil {
				var got []problem.Detail
				for _, d := range e.Details {
					got = append(got, problem.Detail{Path: d.Path, Code: d.Code})
				}
				if !reflect.DeepEqual(got, tc.details) {
					t.Fatalf("details\n got %v\nwant %v", got, tc.details)
				}
			}
			checkSafe(t, e, tc.secrets...)
		})
	}
}

func TestLoadFileFailures(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte("occ: {cluster: "+strings.Repeat("a", MaxFileSize)+"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path string
		env        Env
		code       string
		detail     string
	}{
		{"missing file", filepath.Join(dir, "absent.yaml"), Env{}, CodeUnavailable, ""},
		{"a directory", dir, Env{}, CodeUnavailable, ""},
		{"a FIFO is never opened", fifo, Env{}, CodeUnavailable, ""},
		{"relative path", "config/installation.yaml", Env{}, CodeConfigEnvInvalid, problem.DetailInvalidValue},
		{"production without a path", "", Env{Production: true}, CodeConfigEnvInvalid, problem.DetailRequired},
		{"larger than 1 MiB", big, Env{}, CodeInvalid, problem.DetailTooLong},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Load(tc.path, tc.env)
			e := asError(t, err)
			if e.Code != tc.code {
				t.Fatalf("code %s, want %s", e.Code, tc.code)
			}
			if tc.detail != "" && (len(e.Details) != 1 || e.Details[0].Code != tc.detail) {
				t.Fatalf("details %v", e.Details)
			}
			if tc.code == CodeConfigEnvInvalid && e.Details[0].Path != "/env/OCC_CONFIG_PATH" {
				t.Fatalf("path %q", e.Details[0].Path)
			}
			checkSafe(t, e)
		})
	}
}

func TestLoadUnreadableFile(t *testing.T) {
	t.Parallel()
	if os.Geteuid() == 0 {
		t.Skip("root reads files whatever their mode")
	}
	p := writeFile(t, specExample)
	if err := os.Chmod(p, 0); err != nil {
		t.Fatal(err)
	}
	_, err := Load(p, Env{}, allValidators()...)
	if e := asError(t, err); e.Code != CodeUnavailable {
		t.Fatalf("code %s", e.Code)
	}
}

func TestLoadSpecExample(t *testing.T) {
	t.Parallel()
	// Kubernetes Secret volumes mount files through symbolic links.
	target := writeFile(t, specExample+"logging: {level: debug}\nobservability: {url: 'https://grafana.example.com/d/occ'}\nbackend: []\n")
	link := filepath.Join(t.TempDir(), "installation.yaml")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(link, Env{}, WithValidator(CapabilityCompute, ImplementationSimulated, emptyOnly))
	if err != nil {
		t.Fatal(err)
	}
	want := &Config{
		Cluster:          "local",
		LogLevel:         slog.LevelDebug,
		ObservabilityURL: "https://grafana.example.com/d/occ",
		Compute:          Selection{ID: "compute-simulated", Implementation: "simulated", Configuration: map[string]any{}},
		Configuration:    Selection{ID: "configuration-filesystem", Implementation: "filesystem", Configuration: map[string]any{"root": "/var/lib/occ/configurations"}},
		Secret:           Selection{ID: "secret-filesystem", Implementation: "filesystem", Configuration: map[string]any{"root": "/var/lib/occ/secrets"}},
		IAM:              Selection{ID: "native-iam", Implementation: "native", Configuration: map[string]any{}},
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Fatalf("got  %+v\nwant %+v", cfg, want)
	}
}

func TestLoadProductionDefaultsToKubernetes(t *testing.T) {
	t.Parallel()
	cfg, err := Load(writeFile(t, "---\n"+production+"...\n# end\n"), Env{Production: true}, allValidators()...)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Cluster != "production-west" || cfg.LogLevel != slog.LevelInfo {
		t.Fatalf("%+v", cfg)
	}
	for _, s := range []Selection{cfg.Compute, cfg.Configuration, cfg.Secret} {
		if s.Implementation != ImplementationKubernetes {
			t.Fatalf("%+v", s)
		}
	}
	if cfg.IAM.Implementation != ImplementationNative || cfg.Compute.ID != "compute-kubernetes" {
		t.Fatalf("%+v", cfg)
	}
	mode := cfg.Compute.Configuration["authentication"].(map[string]any)["mode"]
	if mode != "inCluster" {
		t.Fatalf("mode %v", mode)
	}
}

func TestFilesystemRootDefaultsToTheDevelopmentRoot(t *testing.T) {
	t.Parallel()
	doc := strings.Replace(strings.Replace(specExample, "{root: /var/lib/occ/configurations}", "{}", 1), "{root: /var/lib/occ/secrets}", "{}", 1)
	env := Env{DevelopmentConfigurationRoot: "/srv/cfg", DevelopmentSecretRoot: "/srv/sec"}
	cfg, err := Load(writeFile(t, doc), env, allValidators()...)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Configuration.Configuration["root"] != "/srv/cfg" || cfg.Secret.Configuration["root"] != "/srv/sec" {
		t.Fatalf("%+v %+v", cfg.Configuration, cfg.Secret)
	}
}

func TestDefaultsWithoutPath(t *testing.T) {
	t.Parallel()
	cfg, err := Load("", Env{DevelopmentSecretRoot: "/srv/sec"})
	if err != nil {
		t.Fatal(err)
	}
	want := &Config{
		LogLevel:      slog.LevelInfo,
		Compute:       Selection{ID: "compute-docker", Implementation: "docker", Configuration: map[string]any{}},
		Configuration: Selection{ID: "configuration-filesystem", Implementation: "filesystem", Configuration: map[string]any{"root": DefaultDevelopmentConfigurationRoot}},
		Secret:        Selection{ID: "secret-filesystem", Implementation: "filesystem", Configuration: map[string]any{"root": "/srv/sec"}},
		IAM:           Selection{ID: "native-iam", Implementation: "native", Configuration: map[string]any{}},
	}
	if !reflect.DeepEqual(cfg, want) || !reflect.DeepEqual(Default(Env{DevelopmentSecretRoot: "/srv/sec"}), want) {
		t.Fatalf("got %+v", cfg)
	}
}

func TestDevelopmentDocumentWithoutDriversKeepsDefaults(t *testing.T) {
	t.Parallel()
	cfg, err := Load(writeFile(t, "logging: {level: error}\nobservability: {url: 'http://127.0.0.1:3001/d'}\n"), Env{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.LogLevel != slog.LevelError || cfg.Compute.Implementation != ImplementationDocker || cfg.ObservabilityURL == "" {
		t.Fatalf("%+v", cfg)
	}
}

func TestLoadLogLevel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, doc string
		level     slog.Level
		code      string
	}{
		{"drivers are not validated", "logging: {level: warn}\ndrivers: {compute: nonsense}\n", slog.LevelWarn, ""},
		{"no logging section", specExample, slog.LevelInfo, ""},
		{"unknown level", "logging: {level: loud}\n", slog.LevelInfo, CodeDriverConfigurationInvalid},
		{"unknown logging option", "logging: {level: info, format: text}\n", slog.LevelInfo, CodeDriverConfigurationInvalid},
		{"the credential scan still runs", "logging: {level: debug}\nx: {password: hunter2hunter2}\n", slog.LevelInfo, CodeDriverConfigurationInvalid},
		{"not YAML", "logging: [\n", slog.LevelInfo, CodeInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			level, err := LoadLogLevel(writeFile(t, tc.doc))
			if tc.code == "" {
				if err != nil || level != tc.level {
					t.Fatalf("level %v, err %v", level, err)
				}
				return
			}
			e := asError(t, err)
			if e.Code != tc.code {
				t.Fatalf("code %s", e.Code)
			}
			checkSafe(t, e, "hunter2")
		})
	}
	if level, err := LoadLogLevel(""); err != nil || level != slog.LevelInfo {
		t.Fatalf("no path: %v %v", level, err)
	}
	if _, err := LoadLogLevel("relative.yaml"); asError(t, err).Code != CodeConfigEnvInvalid {
		t.Fatal("relative path accepted")
	}
}

func TestRegisteredValidatorOutputIsSanitized(t *testing.T) {
	t.Parallel()
	leaky := func(map[string]any) []problem.Detail {
		return []problem.Detail{
			{Path: "/token/sk-abcdefghijklmnopqrstu", Code: "WHATEVER", Message: "value sk-abcdefghijklmnopqrstu is wrong"},
			{Path: "relative", Code: problem.DetailInvalidFormat, Message: "Bad, really (bad)."},
		}
	}
	panics := func(map[string]any) []problem.Detail { panic("boom") }
	doc := strings.Replace(specExample, "{id: native-iam, configuration: {}}", "{id: native-iam, configuration: {}}", 1)
	_, err := Load(writeFile(t, doc), Env{},
		WithValidator(CapabilityCompute, ImplementationSimulated, leaky),
		WithValidator(CapabilityIAM, ImplementationNative, panics))
	e := asError(t, err)
	want := []problem.Detail{
		{Path: "/drivers/compute/configuration", Code: problem.DetailInvalidValue, Message: msgValidatorFailed},
		{Path: "/drivers/compute/configuration", Code: problem.DetailInvalidFormat, Message: msgValidatorFailed},
		{Path: "/drivers/iam/configuration", Code: problem.DetailInvalidValue, Message: msgValidatorFailed},
	}
	if !reflect.DeepEqual(e.Details, want) {
		t.Fatalf("details %+v", e.Details)
	}
	if e.Message != "The Installation startup YAML does not match its schema." {
		t.Fatalf("message %q", e.Message)
	}
	checkSafe(t, e, "sk-abcdefghijklmnopqrstu")
}

func TestDetailsAreBounded(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString(specExample)
	for i := range 50 {
		fmt.Fprintf(&b, "extra%02d: 1\n", i)
	}
	_, err := Load(writeFile(t, b.String()), Env{}, allValidators()...)
	e := asError(t, err)
	if len(e.Details) != problem.MaxDetails || e.Details[0].Path != "/extra00" {
		t.Fatalf("%d details, first %+v", len(e.Details), e.Details[0])
	}
}

func TestSingleCapabilityMessage(t *testing.T) {
	t.Parallel()
	_, err := Load(writeFile(t, strings.Replace(specExample, "{root: /var/lib/occ/secrets}", "{root: /var/lib/occ/secrets, x: 1}", 1)), Env{}, allValidators()...)
	e := asError(t, err)
	if e.Message != "drivers.secret.configuration does not match its Driver configuration schema." {
		t.Fatalf("message %q", e.Message)
	}
	if d := e.Details; len(d) != 1 || d[0].Path != "/drivers/secret/configuration/x" || d[0].Code != problem.DetailUnknownField {
		t.Fatalf("logged details %+v", d)
	}
}

// TestUpstreamSectionsNameTheirFeature: a section or Driver capability upstream has and this OCC
// does not implement is refused with a message naming the feature, not as an unknown option.
func TestUpstreamSectionsNameTheirFeature(t *testing.T) {
	t.Parallel()
	doc := specExample + "runtime: {nativeWorkerSupport: custom-image}\nbackend: [{id: chatgpt}]\n"
	doc = strings.Replace(doc, "drivers:\n", "drivers:\n  sandbox: {id: openshell}\n  credential_gateway: {id: gw}\n  plugin: {id: p}\n"+
		"  service_account: {id: sa}\n  repo: {id: r}\n  channel: {id: slack}\n", 1)
	_, err := Parse([]byte(doc), Env{}, allValidators()...)
	if err == nil {
		t.Fatal("accepted")
	}
	e := asError(t, err)
	checkSafe(t, e)
	want := map[string]string{
		"/runtime":                    "Native worker support",
		"/backend":                    "Backends",
		"/drivers/sandbox":            "Sandbox Drivers",
		"/drivers/credential_gateway": "Credential gateway Drivers",
		"/drivers/plugin":             "Plugin Drivers",
		"/drivers/service_account":    "ServiceAccount Drivers",
		"/drivers/repo":               "Repository Drivers",
		"/drivers/channel":            "Channel Drivers",
	}
	for _, d := range e.Details {
		feature, ok := want[d.Path]
		if !ok {
			t.Errorf("unexpected detail %+v", d)
			continue
		}
		delete(want, d.Path)
		if !strings.HasPrefix(d.Message, feature) || !strings.Contains(d.Message, "not available in this OCC") {
			t.Errorf("%s: message %q does not name %s as not available", d.Path, d.Message, feature)
		}
	}
	for path := range want {
		t.Errorf("no detail at %s", path)
	}
}

func TestFixedMessagesAreLogSafe(t *testing.T) {
	t.Parallel()
	for _, m := range upstreamCapabilities {
		if !safeMessage.MatchString(m) {
			t.Errorf("message %q is not log-safe", m)
		}
	}
	for _, m := range []string{
		msgUnknownField, msgRequired, msgObject, msgString, msgList, msgPlaintext, msgUnsafeInteger,
		msgSingleton, msgUnsafeKey, msgSecretRef, msgTooDeep, msgPackage,
		msgPresetRelative, msgPresetUnreadable, msgPresetInvalid, msgPresetDuplicate,
		msgRuntime, msgIntegrations, msgBackends, msgDriverID, msgUnknownImpl, msgNotInProduction,
		msgNoValidator, msgLogLevel, msgURL, msgAbsolutePath, msgRootRequired, msgClusterName,
		msgValidatorFailed, msgNativeIAMNotEmpty,
		unavailable().Message, tooLarge().Message,
	} {
		if !safeMessage.MatchString(m) || len(m) > 256 {
			t.Errorf("message %q is not log-safe", m)
		}
	}
}

func TestMultipleDocuments(t *testing.T) {
	t.Parallel()
	for doc, want := range map[string]bool{
		"a: 1\n":                     false,
		"---\na: 1\n":                false,
		"%YAML 1.1\n---\na: 1\n":     false,
		"--- {a: 1}\n":               false,
		"a: 1\n...\n":                false,
		"a: 1\n...\n# trailing\n\n":  false,
		"a: |\n  ---\n  text\n":      false,
		"a: 1\n---\nb: 2\n":          true,
		"---\na: 1\n---\n":           true,
		"a: 1\n...\nb: 2\n":          true,
		"--- {a: 1}\n--- {b: 2}\n":   true,
		"a: 1\r\n---\r\nb: 2\r\n":    true,
		"# only a comment\n---\n---": true,
	} {
		if got := multipleDocuments([]byte(doc)); got != want {
			t.Errorf("multipleDocuments(%q) = %v, want %v", doc, got, want)
		}
	}
}

func FuzzLoad(f *testing.F) {
	for _, seed := range []string{
		specExample, production, "logging: {level: debug}\n", "a: 1\n---\nb: 2\n", "- 1\n", "",
		"occ: {cluster: x}\ndrivers: {compute: {id: c, configuration: {token: sk-proj-abcdefghijklmnop}}}\n",
		"{\"sk-abcdefghijklmnopqrs\": {\"AKIAABCDEFGHIJKLMNOP\": 9007199254740993}}\n",
		"x: &a [*a]\n", "occ: {cluster: \"\\u2028\"}\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, env := range []Env{{}, {Production: true}} {
			cfg, err := Parse(data, env, allValidators()...)
			if err != nil {
				e := asError(t, err)
				checkSafe(t, e)
				continue
			}
			for _, s := range []Selection{cfg.Compute, cfg.Configuration, cfg.Secret, cfg.IAM} {
				if s.ID == "" || s.Implementation == "" || s.Configuration == nil {
					t.Fatalf("incomplete selection %+v", s)
				}
			}
		}
	})
}

func TestLoadPresets(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sim := WithValidator(CapabilityCompute, ImplementationSimulated, emptyOnly)
	write := func(name, content string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("presets/team.json", `{"name": "team", "template": {"agent": {"executionMode": "embedded"}}}`)
	other := write("elsewhere/other.json", `{"name": "other", "template": {}}`)
	yaml := write("installation.yaml", specExample+"presets:\n  includeDefaults: true\n  files: [presets/team.json, "+other+"]\n")
	cfg, err := Load(yaml, Env{}, sim)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range cfg.Presets {
		names = append(names, d.Name)
	}
	if strings.Join(names, ",") != "Dedicated Codex,Embedded OpenClaw,team,other" {
		t.Fatalf("presets %v", names)
	}
	// Without includeDefaults only the files load.
	yaml = write("files-only.yaml", specExample+"presets: {includeDefaults: false, files: [presets/team.json]}\n")
	if cfg, err = Load(yaml, Env{}, sim); err != nil || len(cfg.Presets) != 1 {
		t.Fatalf("files only: %v %v", cfg, err)
	}

	write("presets/bad.json", `{"name": "bad", "template": {"agent": {"harnessAuth": {"method": "api_key", "secret": "sk-literal"}}}}`)
	write("presets/extra.json", `{"name": "x", "template": {}, "more": 1}`)
	write("presets/dup.json", `{"name": "Dedicated Codex", "template": {}}`)
	yaml = write("bad.yaml", specExample+"presets:\n  includeDefaults: true\n  files: [presets/missing.json, presets/bad.json, presets/extra.json, presets/dup.json, presets/team.json, presets/team.json]\n")
	_, err = Load(yaml, Env{}, sim)
	var e *problem.Error
	if !errors.As(err, &e) || e.Code != CodeDriverConfigurationInvalid {
		t.Fatalf("Load = %v", err)
	}
	want := []problem.Detail{
		{Path: "/presets/files/0", Code: problem.DetailInvalidValue, Message: msgPresetUnreadable},
		{Path: "/presets/files/1", Code: problem.DetailInvalidValue, Message: msgPresetInvalid},
		{Path: "/presets/files/2", Code: problem.DetailInvalidValue, Message: msgPresetInvalid},
		{Path: "/presets/files/3", Code: problem.DetailInvalidValue, Message: msgPresetDuplicate},
		{Path: "/presets/files/5", Code: problem.DetailInvalidValue, Message: msgPresetDuplicate},
	}
	got := e.Details
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("details %+v", got)
	}
	yaml = write("closed.yaml", specExample+"presets: {watch: true}\n")
	if _, err = Load(yaml, Env{}, sim); !errors.As(err, &e) || !slicesContainAll(e.Details,
		[]problem.Detail{{Path: "/presets/watch", Code: problem.DetailUnknownField, Message: msgUnknownField}}) {
		t.Fatalf("an unknown presets option: %v", err)
	}
	if strings.Contains(fmt.Sprint(e), "sk-literal") {
		t.Fatal("the error echoes a file's content")
	}
	// Parse has no file to resolve a relative path against.
	if _, err := Parse([]byte(specExample+"presets: {files: [team.json]}\n"), Env{}, sim); err == nil {
		t.Fatal("Parse accepted a relative Preset file")
	}
}

func slicesContainAll(got, want []problem.Detail) bool {
	for _, w := range want {
		found := false
		for _, g := range got {
			if g == w {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}
