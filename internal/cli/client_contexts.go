package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/openclaw/occ/internal/platform"
)

// Contexts: the client's config file ($XDG_CONFIG_HOME/occ/config.yaml, else
// ~/.config/occ/config.yaml; mode 0600 in a 0700 directory) holds named contexts, each an API
// URL, an optional CA bundle, credentials and an optional default Namespace. The current context
// (or --context / OCC_CONTEXT) fills in what flags and environment variables leave unset.

// clientConfig is the config file.
type clientConfig struct {
	CurrentContext string          `json:"currentContext,omitempty"`
	Contexts       []clientContext `json:"contexts"`
}

// clientContext is one named context.
type clientContext struct {
	Name        string             `json:"name"`
	URL         string             `json:"url"`
	CABundle    string             `json:"caBundle,omitempty"`
	Namespace   string             `json:"namespace,omitempty"`
	Credentials contextCredentials `json:"credentials"`
}

func (c *clientConfig) find(name string) (*clientContext, int) {
	for i := range c.Contexts {
		if c.Contexts[i].Name == name {
			return &c.Contexts[i], i
		}
	}
	return nil, -1
}

// clientConfigPath is the config file's path, "" when neither XDG_CONFIG_HOME nor HOME is an
// absolute path.
func clientConfigPath(env Env) string {
	if v, ok := env.Lookup("XDG_CONFIG_HOME"); ok && filepath.IsAbs(v) {
		return filepath.Join(v, "occ", "config.yaml")
	}
	if home, ok := env.Lookup("HOME"); ok && filepath.IsAbs(home) {
		return filepath.Join(home, ".config", "occ", "config.yaml")
	}
	return ""
}

// loadClientConfig reads the config file; a missing file is an empty config. The file must be a
// regular file (no symlink) readable by its owner only: it names credentials.
func loadClientConfig(path string) (*clientConfig, error) {
	cfg := &clientConfig{}
	if path == "" {
		return cfg, nil
	}
	info, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return cfg, nil
	} else if err != nil {
		return nil, fmt.Errorf("cannot read the config file %s: %v", path, osReason(err))
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("the config file %s is not a regular file (symlinks are refused)", path)
	}
	if info.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("the config file %s has mode %04o; it must be readable by its owner only: chmod 600 %s",
			path, info.Mode().Perm(), path)
	}
	if st, ok := info.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return nil, fmt.Errorf("the config file %s belongs to another user", path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read the config file %s: %v", path, osReason(err))
	}
	if err := yaml.UnmarshalStrict(data, cfg); err != nil {
		return nil, fmt.Errorf("the config file %s is invalid: %s", path, strings.TrimPrefix(err.Error(), "error unmarshaling JSON: "))
	}
	seen := map[string]bool{}
	for _, c := range cfg.Contexts {
		if c.Name == "" || seen[c.Name] {
			return nil, fmt.Errorf("the config file %s is invalid: every context needs a unique name", path)
		}
		seen[c.Name] = true
	}
	return cfg, nil
}

// saveClientConfig writes the config file atomically with mode 0600 (directory 0700).
func saveClientConfig(path string, cfg *clientConfig) error {
	if path == "" {
		return errors.New("no config directory: set HOME or XDG_CONFIG_HOME")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("cannot create %s: %v", filepath.Dir(path), osReason(err))
	}
	sort.SliceStable(cfg.Contexts, func(i, j int) bool { return cfg.Contexts[i].Name < cfg.Contexts[j].Name })
	if cfg.Contexts == nil {
		cfg.Contexts = []clientContext{}
	}
	data, err := yaml.Marshal(cfg)
	if err != nil {
		return err
	}
	data = append([]byte("# occ client contexts (occ config --help). Written by occ; mode 0600.\n"), data...)
	tmp, err := os.CreateTemp(filepath.Dir(path), ".config-*.yaml")
	if err != nil {
		return fmt.Errorf("cannot write %s: %v", path, osReason(err))
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("cannot write %s: %v", path, osReason(err))
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("cannot write %s: %v", path, osReason(err))
	}
	return nil
}

// selectContext returns the context a client command uses: --context or OCC_CONTEXT, else the
// config file's current context, else none (a zero context).
func selectContext(env Env, cmd *cobra.Command) (clientContext, error) {
	name, given := setting(env, cmd, "context", "OCC_CONTEXT")
	given = given && name != ""
	path := clientConfigPath(env)
	if path == "" {
		if given {
			return clientContext{}, usageError(env, "--context %s: there is no config file (set HOME or XDG_CONFIG_HOME).", quoteIfNeeded(name))
		}
		return clientContext{}, nil
	}
	cfg, err := loadClientConfig(path)
	if err != nil {
		return clientContext{}, usageError(env, "%v.", err)
	}
	if !given {
		name = cfg.CurrentContext
		if name == "" {
			return clientContext{}, nil
		}
	}
	c, _ := cfg.find(name)
	if c == nil {
		if given {
			return clientContext{}, usageError(env, "there is no context %s in %s. List them with: occ config get-contexts", quoteIfNeeded(name), path)
		}
		return clientContext{}, usageError(env, "the current context %s is not in %s. Choose one with: occ config use-context NAME", quoteIfNeeded(name), path)
	}
	return *c, nil
}

// --- occ config ---------------------------------------------------------------------------------

var contextColumns = []column{
	{"CURRENT", field("current")}, col("NAME", "name"), col("URL", "url"), col("NAMESPACE", "namespace"),
	{"CREDENTIALS", field("credentialsSummary")},
}

// newConfigCommand builds `occ config` and its subcommands. Its cyclomatic complexity (43) is the
// sum of the subcommands' small RunE closures, each a flag check and one file edit; they share the
// group's flags and the config file's load and save, so they stay together as one command tree.
func newConfigCommand(env Env) *cobra.Command {
	group := &cobra.Command{Use: "config", Short: "Manage the client's contexts: API URL, credentials and default Namespace",
		Long: `Contexts live in $XDG_CONFIG_HOME/occ/config.yaml (else ~/.config/occ/config.yaml), mode 0600.
A context is an API URL, an optional CA bundle, credentials (a service key file; the session of
occ login once sign-in support lands) and an optional default Namespace. Client commands use the
current context (or --context NAME, or OCC_CONTEXT) for whatever their flags and environment
variables leave unset. occ dev writes the context dev.`}
	pathOf := func() (string, error) {
		path := clientConfigPath(env)
		if path == "" {
			return "", usageError(env, "no config directory: set HOME or XDG_CONFIG_HOME.")
		}
		return path, nil
	}
	load := func() (string, *clientConfig, error) {
		path, err := pathOf()
		if err != nil {
			return "", nil, err
		}
		cfg, err := loadClientConfig(path)
		if err != nil {
			return "", nil, usageError(env, "%v.", err)
		}
		return path, cfg, nil
	}
	save := func(path string, cfg *clientConfig) error {
		if err := saveClientConfig(path, cfg); err != nil {
			return requestError(env, "%v.", err)
		}
		return nil
	}
	contextArg := func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return contextNames(env), cobra.ShellCompDirectiveNoFileComp
	}

	var output string
	getContexts := &cobra.Command{
		Use: "get-contexts", Short: "List the contexts (* marks the current one)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			path, cfg, err := load()
			if err != nil {
				return err
			}
			if !validOutput(output) {
				return usageError(env, "--output must be table, wide, name, json or yaml.")
			}
			s := &clientSession{env: env, cmd: cmd, output: output}
			s.noHeaders, _ = cmd.Flags().GetBool("no-headers")
			if s.structured() {
				data, _ := json.Marshal(cfg)
				return s.printStructured(data)
			}
			items := make([]map[string]any, 0, len(cfg.Contexts))
			for _, c := range cfg.Contexts {
				current := ""
				if c.Name == cfg.CurrentContext {
					current = "*"
				}
				items = append(items, map[string]any{"current": current, "name": c.Name, "url": c.URL,
					"namespace": c.Namespace, "credentialsSummary": c.Credentials.summary()})
			}
			if len(items) == 0 && s.tabular() {
				fmt.Fprintf(env.Stdout, "No contexts in %s. occ dev writes the context dev; occ config set-context NAME adds one.\n", path)
				return nil
			}
			return s.printItems(items, tableSpec{columns: contextColumns, idField: "name"})
		},
	}
	getContexts.Flags().StringVarP(&output, "output", "o", outputTable, "output format: table, name, json or yaml")
	getContexts.Flags().Bool("no-headers", false, "print the table without its header line")
	_ = getContexts.RegisterFlagCompletionFunc("output", fixedCompletion(outputFormats...))

	currentContext := &cobra.Command{
		Use: "current-context", Short: "Print the current context's name", Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			path, cfg, err := load()
			if err != nil {
				return err
			}
			if cfg.CurrentContext == "" {
				return requestError(env, "no current context in %s. Choose one with: occ config use-context NAME", path)
			}
			fmt.Fprintln(env.Stdout, cfg.CurrentContext)
			return nil
		},
	}

	useContext := &cobra.Command{
		Use: "use-context NAME", Short: "Make a context the current one", Args: cobra.ExactArgs(1),
		ValidArgsFunction: contextArg,
		RunE: func(_ *cobra.Command, args []string) error {
			path, cfg, err := load()
			if err != nil {
				return err
			}
			if c, _ := cfg.find(args[0]); c == nil {
				return usageError(env, "there is no context %s in %s. List them with: occ config get-contexts", quoteIfNeeded(args[0]), path)
			}
			cfg.CurrentContext = args[0]
			if err := save(path, cfg); err != nil {
				return err
			}
			fmt.Fprintf(env.Stdout, "Switched to context %s.\n", sanitize(args[0]))
			return nil
		},
	}

	var set struct {
		url, keyFile, namespace, caBundle string
		current                           bool
	}
	setContext := &cobra.Command{
		Use:   "set-context NAME [--url URL] [--service-key-file FILE] [--namespace NAME] [--ca-bundle FILE] [--current]",
		Short: "Create a context or change some of its fields (an empty value clears a field)",
		Args:  cobra.ExactArgs(1), ValidArgsFunction: contextArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if !platform.ValidName(name) || len(name) > 64 {
				return usageError(env, "%s is not a valid context name: 1 to 64 characters, no outer whitespace, no control characters.", quoteIfNeeded(name))
			}
			path, cfg, err := load()
			if err != nil {
				return err
			}
			c, _ := cfg.find(name)
			created := c == nil
			if created {
				cfg.Contexts = append(cfg.Contexts, clientContext{Name: name})
				c = &cfg.Contexts[len(cfg.Contexts)-1]
			}
			changed := cmd.Flags().Changed
			if changed("url") {
				if set.url != "" {
					origin, err := parseOrigin(set.url)
					if err != nil {
						return usageError(env, "--url: %v.", err)
					}
					set.url = origin
				}
				c.URL = set.url
			}
			if changed("service-key-file") {
				c.Credentials.ServiceKeyFile = ""
				if set.keyFile != "" {
					creds, err := loadServiceKeyCredentials(set.keyFile)
					if err != nil {
						return usageError(env, "--service-key-file: %v.", err)
					}
					c.Credentials.ServiceKeyFile = creds.file
				}
			}
			if changed("namespace") {
				if set.namespace != "" && !platform.ValidName(set.namespace) {
					return usageError(env, "--namespace: %s is neither a Namespace id nor a valid name.", quoteIfNeeded(set.namespace))
				}
				c.Namespace = set.namespace
			}
			if changed("ca-bundle") {
				c.CABundle = ""
				if set.caBundle != "" {
					abs, err := filepath.Abs(set.caBundle)
					if err != nil {
						return usageError(env, "--ca-bundle: %v.", err)
					}
					if _, err := os.Stat(abs); err != nil {
						return usageError(env, "--ca-bundle: cannot read %s: %v.", abs, osReason(err))
					}
					c.CABundle = abs
				}
			}
			if set.current {
				cfg.CurrentContext = name
			}
			if err := save(path, cfg); err != nil {
				return err
			}
			verb := "Updated"
			if created {
				verb = "Created"
			}
			suffix := "."
			if cfg.CurrentContext == name {
				suffix = " (current)."
			}
			fmt.Fprintf(env.Stdout, "%s context %s in %s%s\n", verb, sanitize(name), path, suffix)
			return nil
		},
	}
	sf := setContext.Flags()
	sf.StringVar(&set.url, "url", "", "API origin, such as http://127.0.0.1:3000")
	sf.StringVar(&set.keyFile, "service-key-file", "", "service key file (stored as an absolute path)")
	sf.StringVarP(&set.namespace, "namespace", "n", "", "default Namespace (name or id)")
	sf.StringVar(&set.caBundle, "ca-bundle", "", "extra PEM root certificates for https")
	sf.BoolVar(&set.current, "current", false, "also make it the current context")

	deleteContext := &cobra.Command{
		Use: "delete-context NAME", Short: "Delete a context (the files it names stay)", Args: cobra.ExactArgs(1),
		ValidArgsFunction: contextArg,
		RunE: func(_ *cobra.Command, args []string) error {
			path, cfg, err := load()
			if err != nil {
				return err
			}
			_, i := cfg.find(args[0])
			if i < 0 {
				return usageError(env, "there is no context %s in %s. List them with: occ config get-contexts", quoteIfNeeded(args[0]), path)
			}
			cfg.Contexts = append(cfg.Contexts[:i], cfg.Contexts[i+1:]...)
			note := ""
			if cfg.CurrentContext == args[0] {
				cfg.CurrentContext = ""
				note = " There is no current context now: occ config use-context NAME chooses one."
			}
			if err := save(path, cfg); err != nil {
				return err
			}
			fmt.Fprintf(env.Stdout, "Deleted context %s.%s\n", sanitize(args[0]), note)
			return nil
		},
	}
	group.AddCommand(getContexts, currentContext, useContext, setContext, deleteContext)
	return group
}

// contextNames lists the config file's contexts for completion.
func contextNames(env Env) []string {
	cfg, err := loadClientConfig(clientConfigPath(env))
	if err != nil {
		return nil
	}
	names := make([]string, 0, len(cfg.Contexts))
	for _, c := range cfg.Contexts {
		names = append(names, c.Name)
	}
	return names
}

// devContextName is the context occ dev writes.
const devContextName = "dev"

// writeDevContext records the local stack as the context dev: URL and key file are replaced, the
// default Namespace is kept unless reset says the data is new. dev becomes current when there is
// no current context or it already is. It returns the file and whether dev is current.
func writeDevContext(env Env, url, keyFile string, reset bool) (string, bool, error) {
	path := clientConfigPath(env)
	if path == "" {
		return "", false, errors.New("no config directory: HOME and XDG_CONFIG_HOME are unset")
	}
	cfg, err := loadClientConfig(path)
	if err != nil {
		return path, false, err
	}
	c, _ := cfg.find(devContextName)
	if c == nil {
		cfg.Contexts = append(cfg.Contexts, clientContext{Name: devContextName})
		c = &cfg.Contexts[len(cfg.Contexts)-1]
	}
	c.URL, c.CABundle = url, ""
	c.Credentials = contextCredentials{ServiceKeyFile: keyFile}
	if reset {
		c.Namespace = ""
	}
	if cfg.CurrentContext == "" {
		cfg.CurrentContext = devContextName
	}
	current := cfg.CurrentContext == devContextName
	return path, current, saveClientConfig(path, cfg)
}
