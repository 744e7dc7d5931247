package helmtest

import (
	"strings"
	"testing"
)

// signInValues enable every provider with upstream's auth.* keys, a trusted proxy and shorter CLI
// sessions.
const signInValues = requiredValues + `
auth:
  baseUrl: "https://occ.example.com"
  recoveryUserId: "usr_0b3f0c1e-4a3f-4c2b-9d7e-1a2b3c4d5e6f"
  passwordSignIn: recovery-only
  github: {enabled: true, secretName: occ-github-login, allowedOrgs: [acme], allowedTeams: [acme/platform]}
  google: {enabled: true, secretName: occ-google-login, allowedDomains: [example.com]}
  oidc:
    enabled: true
    issuer: https://sso.example.com/realms/acme
    authorizationUrl: https://sso.example.com/realms/acme/protocol/openid-connect/auth
    tokenUrl: https://sso.example.com/realms/acme/protocol/openid-connect/token
    jwksUrl: https://sso.example.com/realms/acme/protocol/openid-connect/certs
    secretName: occ-oidc-login
    tokenAuth: client_secret_basic
    displayName: Acme SSO
  cliSessions: {enabled: true, maxLifetimeSeconds: 3600}
api:
  trustedProxy: {cidrs: ["10.42.0.0/16"], preset: ingress-nginx}
`

func apiEnv(t *testing.T, values string) map[string]map[string]any {
	t.Helper()
	objects := render(t, values)
	api := find(t, objects, "Deployment", "-api")
	container := field(map[string]any(api), "spec", "template", "spec", "containers").([]any)[0]
	out := map[string]map[string]any{}
	for _, e := range field(container, "env").([]any) {
		m := e.(map[string]any)
		name := m["name"].(string)
		if _, dup := out[name]; dup {
			t.Errorf("api env %s twice", name)
		}
		out[name] = m
	}
	return out
}

// TestChartSignInValues: every provider's values become the API's sign-in variables; client ids
// and secrets come from each provider's own Secret; nothing reaches the worker.
func TestChartSignInValues(t *testing.T) {
	env := apiEnv(t, signInValues)
	plain := map[string]string{
		"OCC_AUTH_GITHUB_ALLOWED_ORGS":              "acme",
		"OCC_AUTH_GITHUB_ALLOWED_TEAMS":             "acme/platform",
		"OCC_AUTH_GOOGLE_ALLOWED_DOMAINS":           "example.com",
		"OCC_AUTH_OIDC_ISSUER":                      "https://sso.example.com/realms/acme",
		"OCC_AUTH_OIDC_TOKEN_URL":                   "https://sso.example.com/realms/acme/protocol/openid-connect/token",
		"OCC_AUTH_OIDC_TOKEN_AUTH":                  "client_secret_basic",
		"OCC_AUTH_OIDC_DISPLAY_NAME":                "Acme SSO",
		"OCC_AUTH_GITHUB_RECOVERY_USER_ID":          "usr_0b3f0c1e-4a3f-4c2b-9d7e-1a2b3c4d5e6f",
		"OCC_AUTH_PASSWORD_SIGN_IN":                 "recovery-only",
		"OCC_AUTH_CLI_SESSION_MAX_LIFETIME_SECONDS": "3600",
		"OCC_AUTH_TRUSTED_PROXY_CIDRS":              "10.42.0.0/16",
		"OCC_AUTH_TRUSTED_PROXY_PRESET":             "ingress-nginx",
	}
	for name, want := range plain {
		if got := env[name]["value"]; got != want {
			t.Errorf("%s = %v, want %s", name, got, want)
		}
	}
	for provider, secret := range map[string]string{"GITHUB": "occ-github-login", "GOOGLE": "occ-google-login", "OIDC": "occ-oidc-login"} {
		for suffix, key := range map[string]string{"_CLIENT_ID": "client-id", "_CLIENT_SECRET": "client-secret"} {
			ref := field(env["OCC_AUTH_"+provider+suffix], "valueFrom", "secretKeyRef")
			if field(ref, "name") != secret || field(ref, "key") != key {
				t.Errorf("OCC_AUTH_%s%s from %v", provider, suffix, ref)
			}
		}
	}
	// Defaults stay unrendered, as upstream renders them.
	defaults := apiEnv(t, requiredValues)
	for name := range defaults {
		if strings.HasPrefix(name, "OCC_AUTH_") && name != "OCC_AUTH_BASE_URL" && name != "OCC_AUTH_SECRET" {
			t.Errorf("default values render %s", name)
		}
	}
	worker := find(t, render(t, signInValues), "Deployment", "-worker")
	for _, e := range field(map[string]any(worker), "spec", "template", "spec", "containers", "env").([]any) {
		if name := e.(map[string]any)["name"].(string); strings.HasPrefix(name, "OCC_AUTH_") {
			t.Errorf("the worker receives %s", name)
		}
	}
}

// TestChartRefusesSignInValues: the chart refuses what the API would refuse at startup.
func TestChartRefusesSignInValues(t *testing.T) {
	oidcOnly := requiredValues + "\nauth: {baseUrl: \"https://occ.example.com\", recoveryUserId: usr_0b3f0c1e-4a3f-4c2b-9d7e-1a2b3c4d5e6f, oidc: {enabled: true, issuer: \"https://sso.example.com\", secretName: occ-oidc}}\n"
	if err := tryRender(oidcOnly); err != nil {
		t.Fatalf("discovered OIDC: %v", err)
	}
	for _, tc := range []struct{ name, values, wantErr string }{
		{"native admin with a provider", oidcOnly + "agentNativeAdmin: {enabled: true, cookieDomain: example.com}\n", "EXTERNAL_SIGN_IN_NATIVE_ADMIN_UNSUPPORTED"},
		{"no recovery account", requiredValues + "\nauth: {baseUrl: \"https://occ.example.com\", github: {enabled: true, secretName: gh}}\n", "auth.recoveryUserId"},
		{"http base url", requiredValues + "\nauth: {baseUrl: \"http://occ.example.com\", recoveryUserId: u, github: {enabled: true, secretName: gh}}\n", "https auth.baseUrl"},
		{"no secret", requiredValues + "\nauth: {baseUrl: \"https://occ.example.com\", recoveryUserId: u, google: {enabled: true}}\n", "auth.google.secretName"},
		{"shared secret", requiredValues + "\nauth: {baseUrl: \"https://occ.example.com\", recoveryUserId: u, github: {enabled: true, secretName: occ-auth}}\n", "a Secret of its own"},
		{"recovery-only without a provider", requiredValues + "\nauth: {baseUrl: \"https://occ.example.com\", passwordSignIn: recovery-only}\n", "recovery-only needs"},
		{"unknown posture", requiredValues + "\nauth: {baseUrl: \"https://occ.example.com\", passwordSignIn: none}\n", "all or recovery-only"},
		{"partial oidc urls", requiredValues + "\nauth: {baseUrl: \"https://occ.example.com\", recoveryUserId: u, oidc: {enabled: true, issuer: \"https://sso.example.com\", secretName: occ-oidc, tokenUrl: \"https://sso.example.com/t\"}}\n", "set together"},
		{"domains without google", requiredValues + "\nauth: {baseUrl: \"https://occ.example.com\", google: {allowedDomains: [example.com]}}\n", "auth.google.enabled"},
		{"proxy trusting everyone", requiredValues + "\napi: {trustedProxy: {cidrs: [\"0.0.0.0/0\"]}}\n", "every address"},
		{"generic proxy without header", requiredValues + "\napi: {trustedProxy: {cidrs: [\"10.0.0.0/8\"], preset: generic}}\n", "clientAddressHeader"},
		{"cli lifetime", requiredValues + "\nauth: {baseUrl: \"https://occ.example.com\", cliSessions: {maxLifetimeSeconds: 60}}\n", "900 to 28800"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tryRender(tc.values)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("render error %v, want one naming %q", err, tc.wantErr)
			}
		})
	}
}
