package cli

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/driver/builtin"
	"github.com/openclaw/occ/internal/driver/filesystem"
	"github.com/openclaw/occ/internal/driver/kubernetes"
	"github.com/openclaw/occ/internal/installcfg"
	"github.com/openclaw/occ/internal/obs"
	"github.com/openclaw/occ/internal/problem"
	"github.com/openclaw/occ/internal/settings"
)

// startupConfig loads the trusted startup YAML (or the development defaults) with every
// compiled-in Compute implementation's closed schema and the Kubernetes Configuration and Secret
// Drivers' schemas, then builds the selected Compute Driver. Every refusal is a startupError with
// the DRIVER_CONFIGURATION_INVALID family of codes.
func startupConfig(lookup settings.Lookup, mode settings.Mode, configPath, configurationRoot, secretRoot string) (*installcfg.Config, driver.Compute, error) {
	registry := builtin.ComputeRegistry()
	var opts []installcfg.Option
	for _, impl := range registry.Implementations() {
		opts = append(opts, installcfg.WithValidator(installcfg.CapabilityCompute, impl.Name, schemaValidator(impl.Schema)))
	}
	opts = append(opts,
		installcfg.WithValidator(installcfg.CapabilityConfiguration, installcfg.ImplementationKubernetes, schemaValidator(kubernetes.ConfigurationSchema())),
		installcfg.WithValidator(installcfg.CapabilitySecret, installcfg.ImplementationKubernetes, schemaValidator(kubernetes.SecretSchema())))
	env := installcfg.Env{Production: mode == settings.Production, DevelopmentConfigurationRoot: configurationRoot, DevelopmentSecretRoot: secretRoot}
	var cfg *installcfg.Config
	var err error
	if configPath == "" && mode != settings.Production {
		cfg = installcfg.Default(env)
	} else {
		cfg, err = installcfg.Load(configPath, env, opts...)
		if err != nil {
			return nil, nil, err
		}
	}
	compute, err := registry.NewCompute(cfg.Compute.Implementation, cfg.Compute.ID, cfg.Compute.Configuration,
		driver.Environment{Production: mode == settings.Production, LookupEnv: lookup})
	if err != nil {
		return nil, nil, computeSelectionError(err)
	}
	return cfg, compute, nil
}

// schemaValidator checks a selection's configuration against a driver's closed schema.
func schemaValidator(schema driver.ConfigurationSchema) installcfg.ConfigurationValidator {
	return func(cfg map[string]any) []problem.Detail {
		return configurationDetails(schema.Validate(cfg))
	}
}

// configurationDetails turns a driver's configuration refusal into startup-YAML details.
func configurationDetails(err error) []problem.Detail {
	if err == nil {
		return nil
	}
	var ce *driver.ConfigurationError
	if !errors.As(err, &ce) {
		return []problem.Detail{{Code: problem.DetailInvalidValue, Message: "The Driver configuration is invalid."}}
	}
	return ce.Details
}

// computeSelectionError reports a Compute Driver that could not be built from a configuration the
// schema accepted (semantic refusal, unavailable implementation).
func computeSelectionError(err error) error {
	details := []problem.Detail{{Path: "/drivers/compute", Code: problem.DetailInvalidValue, Message: "The Compute Driver refused its configuration."}}
	var ce *driver.ConfigurationError
	if errors.As(err, &ce) {
		details = problem.Under("/drivers/compute/configuration", ce.Details)
	}
	var ue *driver.ImplementationUnavailableError
	if errors.As(err, &ue) {
		details = []problem.Detail{{Path: "/drivers/compute/implementation", Code: problem.DetailInvalidValue, Message: "The Compute implementation is not available here."}}
	}
	return &problem.Error{Code: installcfg.CodeDriverConfigurationInvalid, Message: "The startup configuration selects a Compute Driver that cannot be built.", Details: details}
}

// startupConfigFailure writes a startup configuration refusal (a *problem.Error) as the process's
// startup failure line.
func startupConfigFailure(env Env, service, event string, err error) error {
	var pe *problem.Error
	if !errors.As(err, &pe) {
		pe = &problem.Error{Code: "STARTUP_FAILED", Message: "The startup configuration could not be loaded."}
	}
	obs.WriteStartupFailure(env.Stderr, service, event, pe)
	return exitError{Code: 1}
}

// storageDrivers builds the Configuration and Secret Drivers the API uses from the validated
// startup selection (filesystem or kubernetes; the kubernetes drivers make no request here: RBAC
// and namespace problems surface on the first operation as 503). An implementation this function
// does not know yields nil: the API then answers the routes that need it with 503
// DEPENDENCY_UNAVAILABLE. The worker does not call this.
func storageDrivers(cfg *installcfg.Config, mode settings.Mode, lookup settings.Lookup) (driver.Configuration, driver.Secret, error) {
	env := driver.Environment{Production: mode == settings.Production, LookupEnv: lookup}
	var configurations driver.Configuration
	var secrets driver.Secret
	switch cfg.Configuration.Implementation {
	case installcfg.ImplementationFilesystem:
		c, err := filesystem.NewConfigurations(cfg.Configuration.ID, cfg.Configuration.Configuration)
		if err != nil {
			return nil, nil, storageSelectionError("configuration", err)
		}
		configurations = c
	case installcfg.ImplementationKubernetes:
		c, err := kubernetes.NewConfigurations(cfg.Configuration.ID, cfg.Configuration.Configuration, env)
		if err != nil {
			return nil, nil, storageSelectionError("configuration", err)
		}
		configurations = c
	}
	switch cfg.Secret.Implementation {
	case installcfg.ImplementationFilesystem:
		s, err := filesystem.NewSecrets(cfg.Secret.ID, cfg.Secret.Configuration, env)
		if err != nil {
			return nil, nil, storageSelectionError("secret", err)
		}
		secrets = s
	case installcfg.ImplementationKubernetes:
		s, err := kubernetes.NewSecrets(cfg.Secret.ID, cfg.Secret.Configuration, env)
		if err != nil {
			return nil, nil, storageSelectionError("secret", err)
		}
		secrets = s
	}
	return configurations, secrets, nil
}

func storageSelectionError(capability string, err error) error {
	details := []problem.Detail{{Path: "/drivers/" + capability, Code: problem.DetailInvalidValue, Message: "The Driver refused its configuration."}}
	var ce *driver.ConfigurationError
	if errors.As(err, &ce) {
		details = problem.Under("/drivers/"+capability+"/configuration", ce.Details)
	}
	var ue *driver.ImplementationUnavailableError
	if errors.As(err, &ue) {
		details = []problem.Detail{{Path: "/drivers/" + capability + "/implementation", Code: problem.DetailInvalidValue, Message: "The implementation is not available here."}}
	}
	return &problem.Error{Code: installcfg.CodeDriverConfigurationInvalid, Message: "The startup configuration selects a " + capability + " Driver that cannot be built.", Details: details}
}

// computePreflight runs the Compute Driver's preflight before a process serves or claims anything:
// a refusal writes one startup-error line (with code, host and port for a *driver.PreflightError)
// and returns the exit error; warnings are logged as compute.preflight-warning and startup goes on.
func computePreflight(ctx context.Context, env Env, service, event, fallbackCode string, compute driver.Compute, log *slog.Logger) error {
	p, ok := compute.(driver.Preflighter)
	if !ok {
		return nil
	}
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	warnings, err := p.Preflight(pctx)
	cancel()
	if err != nil {
		var pe *driver.PreflightError
		if errors.As(err, &pe) {
			obs.NewLogger(env.Stderr, service, slog.LevelInfo).Error(event,
				"code", pe.Code, "message", "The Compute Driver preflight failed.", "host", pe.Host, "port", pe.Port,
				"computeDriverId", compute.ID())
			return exitError{Code: 1}
		}
		obs.WriteStartupFailure(env.Stderr, service, event, &problem.Error{Code: fallbackCode, Message: "The Compute Driver preflight failed."})
		return exitError{Code: 1}
	}
	for _, w := range warnings {
		log.Warn("compute.preflight-warning", "computeDriverId", compute.ID(), "code", w.Code, "message", w.Message)
	}
	return nil
}
