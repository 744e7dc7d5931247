package platform

import (
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/openclaw/occ/internal/problem"
)

// ConfigurationKindAgent is the only Configuration kind.
const ConfigurationKindAgent = "agent"

// Limits of secretBindings.
const (
	MaxSecretBindings      = 64
	MaxSecretBindingName   = 253
	SecretBindingNameRegex = `^[A-Za-z_][A-Za-z0-9_]*$`
	SecretDeliveryEnv      = "env"
)

// reservedEnvPrefixes and reservedEnvNames may not be bound: the runtime owns them.
var (
	reservedEnvPrefixes = []string{"OPENCLAW_", "CODEX_", "OPENAI_", "ANTHROPIC_", "OCC_", "KUBERNETES_"}
	reservedEnvNames    = []string{"PATH", "HOME", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "FTP_PROXY"}
)

// ReservedEnvName reports whether a secretBindings name is reserved. Proxy variables are
// reserved in any letter case, because runtimes read both spellings.
func ReservedEnvName(name string) bool {
	if slices.Contains(reservedEnvNames, strings.ToUpper(name)) {
		return true
	}
	for _, p := range reservedEnvPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// ModelAPIs are the model APIs the pinned runtimes speak (the `api` of a model provider).
var ModelAPIs = []string{
	"openai-completions", "openai-responses", "openai-codex-responses", "anthropic-messages",
	"google-generative-ai", "ollama", "bedrock-converse-stream",
}

// ValidateConfigurationValues is the light validation of a native OpenClaw document: every model
// provider's baseUrl (and that of its models entries) must be an absolute http(s) URL and its api
// one of ModelAPIs. Blank baseUrls and ${VAR} values are skipped. Detail paths point inside the
// request (prefix, e.g. "/values").
func ValidateConfigurationValues(values map[string]any, prefix string) []problem.Detail {
	var details []problem.Detail
	models, _ := values["models"].(map[string]any)
	providers, ok := models["providers"].(map[string]any)
	if !ok {
		return nil
	}
	names := make([]string, 0, len(providers))
	for name := range providers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		provider, ok := providers[name].(map[string]any)
		if !ok {
			continue
		}
		path := prefix + problem.JSONPointer("models", "providers", name)
		details = append(details, checkModelEndpoint(provider, path)...)
		entries, _ := provider["models"].([]any)
		for i, entry := range entries {
			if m, ok := entry.(map[string]any); ok {
				details = append(details, checkModelEndpoint(m, path+"/models/"+strconv.Itoa(i))...)
			}
		}
		if len(details) >= problem.MaxDetails {
			return details[:problem.MaxDetails]
		}
	}
	return details
}

func checkModelEndpoint(m map[string]any, path string) []problem.Detail {
	var details []problem.Detail
	if raw, present := m["baseUrl"]; present {
		s, ok := raw.(string)
		switch {
		case !ok:
			details = append(details, problem.Detail{Path: path + "/baseUrl", Code: problem.DetailInvalidType})
		case strings.TrimSpace(s) == "" || strings.Contains(s, "${"):
		default:
			u, err := url.Parse(s)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				details = append(details, problem.Detail{Path: path + "/baseUrl", Code: problem.DetailInvalidFormat})
			}
		}
	}
	if raw, present := m["api"]; present {
		s, ok := raw.(string)
		switch {
		case !ok:
			details = append(details, problem.Detail{Path: path + "/api", Code: problem.DetailInvalidType})
		case strings.Contains(s, "${"):
		case !slices.Contains(ModelAPIs, s):
			details = append(details, problem.Detail{Path: path + "/api", Code: problem.DetailInvalidValue})
		}
	}
	return details
}
