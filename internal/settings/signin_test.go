package settings

import (
	"errors"
	"net/netip"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/problem"
)

// defaultSignIn is the sign-in configuration of an environment that sets none of its variables.
var defaultSignIn = SignIn{PasswordSignIn: PasswordSignInAll, CLISessions: true, CLISessionMaxLifetime: 8 * time.Hour}

const testRecovery = "usr_0b3f0c1e-4a3f-4c2b-9d7e-1a2b3c4d5e6f"

func githubEnv() env {
	return env{"OCC_AUTH_GITHUB_CLIENT_ID": "Iv1.abc", "OCC_AUTH_GITHUB_CLIENT_SECRET": "gh-secret", "OCC_AUTH_GITHUB_RECOVERY_USER_ID": testRecovery}
}

func oidcEnv() env {
	return env{
		"OCC_AUTH_OIDC_ISSUER": "https://sso.example.com/realms/acme", "OCC_AUTH_OIDC_CLIENT_ID": "occ",
		"OCC_AUTH_OIDC_CLIENT_SECRET": "oidc-secret", "OCC_AUTH_GITHUB_RECOVERY_USER_ID": testRecovery,
	}
}

// signInDefaults are the defaults of the sign-in variables as the loaders produce them; the
// OIDC and proxy defaults apply only once those features are configured.
func signInDefaults(a SignIn) map[string]string {
	out := map[string]string{
		"OCC_AUTH_PASSWORD_SIGN_IN":                 a.PasswordSignIn,
		"OCC_AUTH_CLI_SESSIONS":                     map[bool]string{true: "enabled", false: "disabled"}[a.CLISessions],
		"OCC_AUTH_CLI_SESSION_MAX_LIFETIME_SECONDS": strconv.Itoa(int(a.CLISessionMaxLifetime / time.Second)),
		"OCC_AGENT_NATIVE_ADMIN_ENABLED":            strconv.FormatBool(a.NativeAdmin),
	}
	if o, err := LoadAPI(MapLookup(apiDev().with(oidcEnv()))); err == nil {
		out["OCC_AUTH_OIDC_TOKEN_AUTH"] = o.SignIn.OIDC.TokenAuth
		out["OCC_AUTH_OIDC_DISPLAY_NAME"] = o.SignIn.OIDC.DisplayName
	}
	if p, err := LoadAPI(MapLookup(apiProd().with(env{"OCC_AUTH_TRUSTED_PROXY_CIDRS": "10.0.0.0/8"}))); err == nil {
		out["OCC_AUTH_TRUSTED_PROXY_PRESET"] = p.SignIn.TrustedProxy.Preset
	}
	return out
}

func TestSignInValues(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		env   env
		check func(t *testing.T, s SignIn)
	}{
		{"github with allowlist", apiProd().with(githubEnv()).with(env{
			"OCC_AUTH_GITHUB_ALLOWED_ORGS": " Acme ,tools", "OCC_AUTH_GITHUB_ALLOWED_TEAMS": "acme/Platform",
			"OCC_AUTH_PASSWORD_SIGN_IN": "recovery-only",
		}), func(t *testing.T, s SignIn) {
			g := s.GitHub
			if g == nil || g.ClientID != "Iv1.abc" || g.ClientSecret != "gh-secret" || !slices.Equal(g.AllowedOrgs, []string{"acme", "tools"}) ||
				!slices.Equal(g.AllowedTeams, []string{"acme/platform"}) || s.RecoveryUserID != testRecovery ||
				s.PasswordSignIn != PasswordSignInRecoveryOnly || !s.External() {
				t.Fatalf("%+v %+v", s, g)
			}
		}},
		{"google with domains", apiDev().with(env{
			"OCC_AUTH_GOOGLE_CLIENT_ID": "123.apps.googleusercontent.com", "OCC_AUTH_GOOGLE_CLIENT_SECRET": "g",
			"OCC_AUTH_GOOGLE_ALLOWED_DOMAINS": "Example.com,corp.example.org", "OCC_AUTH_GITHUB_RECOVERY_USER_ID": testRecovery,
		}), func(t *testing.T, s SignIn) {
			if s.Google == nil || !slices.Equal(s.Google.AllowedDomains, []string{"example.com", "corp.example.org"}) || s.GitHub != nil {
				t.Fatalf("%+v", s.Google)
			}
		}},
		{"oidc discovered", apiDev().with(oidcEnv()), func(t *testing.T, s SignIn) {
			o := s.OIDC
			if o == nil || !o.Discovered() || o.TokenAuth != TokenAuthClientSecretPost || o.DisplayName != DefaultOIDCDisplayName {
				t.Fatalf("%+v", o)
			}
		}},
		{"oidc explicit on loopback http", apiDev().with(env{
			"OCC_AUTH_OIDC_ISSUER": "http://127.0.0.1:9000/", "OCC_AUTH_OIDC_AUTHORIZATION_URL": "http://127.0.0.1:9000/auth",
			"OCC_AUTH_OIDC_TOKEN_URL": "http://127.0.0.1:9000/token", "OCC_AUTH_OIDC_JWKS_URL": "http://127.0.0.1:9000/keys",
			"OCC_AUTH_OIDC_CLIENT_ID": "occ", "OCC_AUTH_OIDC_CLIENT_SECRET": "s", "OCC_AUTH_OIDC_TOKEN_AUTH": "client_secret_basic",
			"OCC_AUTH_OIDC_DISPLAY_NAME": "Acme SSO", "OCC_AUTH_GITHUB_RECOVERY_USER_ID": testRecovery,
		}), func(t *testing.T, s SignIn) {
			o := s.OIDC
			if o.Discovered() || o.Issuer != "http://127.0.0.1:9000/" || o.JWKSURL != "http://127.0.0.1:9000/keys" ||
				o.TokenAuth != TokenAuthClientSecretBasic || o.DisplayName != "Acme SSO" {
				t.Fatalf("%+v", o)
			}
		}},
		{"trusted proxy generic", apiProd().with(env{
			"OCC_AUTH_TRUSTED_PROXY_CIDRS": "10.0.0.0/8, fd00::/8,192.0.2.7,::ffff:198.51.100.0/120", "OCC_AUTH_TRUSTED_PROXY_PRESET": "generic",
			"OCC_AUTH_CLIENT_IP_HEADER": "x-real-ip",
		}), func(t *testing.T, s SignIn) {
			want := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8"),
				netip.MustParsePrefix("192.0.2.7/32"), netip.MustParsePrefix("198.51.100.0/24")}
			if p := s.TrustedProxy; p == nil || p.Header != "x-real-ip" || !reflect.DeepEqual(p.CIDRs, want) {
				t.Fatalf("%+v", s.TrustedProxy)
			}
		}},
		{"trusted proxy is production only", apiDev().with(env{"OCC_AUTH_TRUSTED_PROXY_CIDRS": "not read"}), func(t *testing.T, s SignIn) {
			if s.TrustedProxy != nil {
				t.Fatal(s.TrustedProxy)
			}
		}},
		{"cli sessions", apiDev().with(env{"OCC_AUTH_CLI_SESSIONS": "disabled", "OCC_AUTH_CLI_SESSION_MAX_LIFETIME_SECONDS": "900"}), func(t *testing.T, s SignIn) {
			if s.CLISessions || s.CLISessionMaxLifetime != 15*time.Minute {
				t.Fatalf("%+v", s)
			}
		}},
		{"native admin with cookie domain", apiProd().with(env{
			"OCC_AUTH_BASE_URL": "https://console.oce.example.com", "OCC_AGENT_NATIVE_ADMIN_ENABLED": "true",
			"OCC_AUTH_COOKIE_DOMAIN": "oce.example.com",
		}), func(t *testing.T, s SignIn) {
			if !s.NativeAdmin || s.CookieDomain != "oce.example.com" {
				t.Fatalf("%+v", s)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a, err := LoadAPI(MapLookup(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, a.SignIn)
			if s := a.String() + a.GoString(); strings.Contains(s, "gh-secret") || strings.Contains(s, "oidc-secret") {
				t.Fatalf("a client secret is printed: %s", s)
			}
		})
	}
}

// TestSignInRefusals: every refusal happens in the loader, before the API connects anywhere, with
// a stable code and the variable that caused it.
func TestSignInRefusals(t *testing.T) {
	t.Parallel()
	native := env{"OCC_AUTH_BASE_URL": "https://console.oce.example.com", "OCC_AGENT_NATIVE_ADMIN_ENABLED": "true", "OCC_AUTH_COOKIE_DOMAIN": "oce.example.com"}
	cases := []struct {
		name, variable, code, detail string
		env                          env
	}{
		{"github without secret", "OCC_AUTH_GITHUB_CLIENT_SECRET", CodeConfigEnvInvalid, problem.DetailRequired,
			apiProd().with(githubEnv()).with(nil, "OCC_AUTH_GITHUB_CLIENT_SECRET")},
		{"github without client id", "OCC_AUTH_GITHUB_CLIENT_ID", CodeConfigEnvInvalid, problem.DetailRequired,
			apiProd().with(githubEnv()).with(nil, "OCC_AUTH_GITHUB_CLIENT_ID")},
		{"github without recovery account", "OCC_AUTH_GITHUB_RECOVERY_USER_ID", CodeConfigEnvInvalid, problem.DetailRequired,
			apiProd().with(githubEnv()).with(nil, "OCC_AUTH_GITHUB_RECOVERY_USER_ID")},
		{"recovery account without provider", "OCC_AUTH_GITHUB_RECOVERY_USER_ID", CodeConfigEnvInvalid, problem.DetailInvalidValue,
			apiProd().with(env{"OCC_AUTH_GITHUB_RECOVERY_USER_ID": testRecovery})},
		{"recovery account malformed", "OCC_AUTH_GITHUB_RECOVERY_USER_ID", CodeConfigEnvInvalid, problem.DetailInvalidFormat,
			apiProd().with(githubEnv()).with(env{"OCC_AUTH_GITHUB_RECOVERY_USER_ID": "admin@example.com"})},
		{"allowed orgs without github", "OCC_AUTH_GITHUB_ALLOWED_ORGS", CodeConfigEnvInvalid, problem.DetailInvalidValue,
			apiProd().with(env{"OCC_AUTH_GITHUB_ALLOWED_ORGS": "acme"})},
		{"allowed team malformed", "OCC_AUTH_GITHUB_ALLOWED_TEAMS", CodeConfigEnvInvalid, problem.DetailInvalidFormat,
			apiProd().with(githubEnv()).with(env{"OCC_AUTH_GITHUB_ALLOWED_TEAMS": "acme"})},
		{"allowlist too long", "OCC_AUTH_GITHUB_ALLOWED_TEAMS", CodeConfigEnvInvalid, problem.DetailInvalidValue,
			apiProd().with(githubEnv()).with(env{"OCC_AUTH_GITHUB_ALLOWED_ORGS": "a,b,c,d,e,f", "OCC_AUTH_GITHUB_ALLOWED_TEAMS": "a/1,a/2,a/3,a/4,a/5"})},
		{"google domain malformed", "OCC_AUTH_GOOGLE_ALLOWED_DOMAINS", CodeConfigEnvInvalid, problem.DetailInvalidFormat,
			apiProd().with(env{"OCC_AUTH_GOOGLE_CLIENT_ID": "g", "OCC_AUTH_GOOGLE_CLIENT_SECRET": "s",
				"OCC_AUTH_GITHUB_RECOVERY_USER_ID": testRecovery, "OCC_AUTH_GOOGLE_ALLOWED_DOMAINS": "@example.com"})},
		{"oidc without client", "OCC_AUTH_OIDC_CLIENT_ID", CodeConfigEnvInvalid, problem.DetailRequired,
			apiProd().with(oidcEnv()).with(nil, "OCC_AUTH_OIDC_CLIENT_ID", "OCC_AUTH_OIDC_CLIENT_SECRET")},
		{"oidc client without issuer", "OCC_AUTH_OIDC_ISSUER", CodeConfigEnvInvalid, problem.DetailRequired,
			apiProd().with(oidcEnv()).with(nil, "OCC_AUTH_OIDC_ISSUER")},
		{"oidc partial urls", "OCC_AUTH_OIDC_TOKEN_URL", CodeConfigEnvInvalid, problem.DetailRequired,
			apiProd().with(oidcEnv()).with(env{"OCC_AUTH_OIDC_AUTHORIZATION_URL": "https://sso.example.com/auth"})},
		{"oidc http issuer", "OCC_AUTH_OIDC_ISSUER", CodeConfigEnvInvalid, problem.DetailInvalidValue,
			apiProd().with(oidcEnv()).with(env{"OCC_AUTH_OIDC_ISSUER": "http://sso.example.com"})},
		{"oidc url on another host", "OCC_AUTH_OIDC_JWKS_URL", CodeConfigEnvInvalid, problem.DetailInvalidValue,
			apiProd().with(oidcEnv()).with(env{"OCC_AUTH_OIDC_AUTHORIZATION_URL": "https://sso.example.com/a",
				"OCC_AUTH_OIDC_TOKEN_URL": "https://sso.example.com/t", "OCC_AUTH_OIDC_JWKS_URL": "https://keys.example.net/k"})},
		{"oidc url with query", "OCC_AUTH_OIDC_AUTHORIZATION_URL", CodeConfigEnvInvalid, problem.DetailInvalidValue,
			apiProd().with(oidcEnv()).with(env{"OCC_AUTH_OIDC_AUTHORIZATION_URL": "https://sso.example.com/a?x=1",
				"OCC_AUTH_OIDC_TOKEN_URL": "https://sso.example.com/t", "OCC_AUTH_OIDC_JWKS_URL": "https://sso.example.com/k"})},
		{"oidc token auth", "OCC_AUTH_OIDC_TOKEN_AUTH", CodeConfigEnvInvalid, problem.DetailInvalidValue,
			apiProd().with(oidcEnv()).with(env{"OCC_AUTH_OIDC_TOKEN_AUTH": "private_key_jwt"})},
		{"oidc label too long", "OCC_AUTH_OIDC_DISPLAY_NAME", CodeConfigEnvInvalid, problem.DetailInvalidValue,
			apiProd().with(oidcEnv()).with(env{"OCC_AUTH_OIDC_DISPLAY_NAME": strings.Repeat("x", 41)})},
		{"oidc label without oidc", "OCC_AUTH_OIDC_DISPLAY_NAME", CodeConfigEnvInvalid, problem.DetailInvalidValue,
			apiProd().with(env{"OCC_AUTH_OIDC_DISPLAY_NAME": "SSO"})},
		{"recovery-only without provider", "OCC_AUTH_PASSWORD_SIGN_IN", CodeConfigEnvInvalid, problem.DetailInvalidValue,
			apiProd().with(env{"OCC_AUTH_PASSWORD_SIGN_IN": "recovery-only"})},
		{"unknown password posture", "OCC_AUTH_PASSWORD_SIGN_IN", CodeConfigEnvInvalid, problem.DetailInvalidValue,
			apiProd().with(githubEnv()).with(env{"OCC_AUTH_PASSWORD_SIGN_IN": "none"})},
		{"external sign-in with native admin", "OCC_AGENT_NATIVE_ADMIN_ENABLED", CodeExternalSignInNativeAdminUnsupported, problem.DetailInvalidValue,
			apiProd().with(githubEnv()).with(native)},
		{"oidc with native admin", "OCC_AGENT_NATIVE_ADMIN_ENABLED", CodeExternalSignInNativeAdminUnsupported, problem.DetailInvalidValue,
			apiProd().with(oidcEnv()).with(native)},
		{"cookie domain without native admin", "OCC_AUTH_COOKIE_DOMAIN", CodeAuthBaseURLInvalid, problem.DetailInvalidValue,
			apiProd().with(env{"OCC_AUTH_COOKIE_DOMAIN": "example.com"})},
		{"native admin without cookie domain", "OCC_AUTH_COOKIE_DOMAIN", CodeAuthBaseURLInvalid, problem.DetailRequired,
			apiProd().with(native).with(nil, "OCC_AUTH_COOKIE_DOMAIN")},
		{"cookie domain malformed", "OCC_AUTH_COOKIE_DOMAIN", CodeAuthBaseURLInvalid, problem.DetailInvalidFormat,
			apiProd().with(native).with(env{"OCC_AUTH_COOKIE_DOMAIN": ".oce.example.com"})},
		{"cookie domain is a public suffix", "OCC_AUTH_COOKIE_DOMAIN", CodeAuthBaseURLInvalid, problem.DetailInvalidValue,
			apiProd().with(native).with(env{"OCC_AUTH_BASE_URL": "https://console.example.co.uk", "OCC_AUTH_COOKIE_DOMAIN": "co.uk"})},
		{"cookie domain misses the base url host", "OCC_AUTH_COOKIE_DOMAIN", CodeAuthBaseURLInvalid, problem.DetailInvalidValue,
			apiProd().with(native).with(env{"OCC_AUTH_COOKIE_DOMAIN": "other.example.com"})},
		{"cookie domain label boundary", "OCC_AUTH_COOKIE_DOMAIN", CodeAuthBaseURLInvalid, problem.DetailInvalidValue,
			apiProd().with(native).with(env{"OCC_AUTH_BASE_URL": "https://console.myoce.example.com"})},
		{"cookie domain without https", "OCC_AUTH_COOKIE_DOMAIN", CodeAuthBaseURLInvalid, problem.DetailInvalidValue,
			apiProd().with(native).with(env{"OCC_AUTH_BASE_URL": "http://127.0.0.1:8080", "OCC_AUTH_COOKIE_DOMAIN": "example.com"})},
		{"native admin not a boolean", "OCC_AGENT_NATIVE_ADMIN_ENABLED", CodeConfigEnvInvalid, problem.DetailInvalidValue,
			apiProd().with(env{"OCC_AGENT_NATIVE_ADMIN_ENABLED": "yes"})},
		{"proxy every ipv4", "OCC_AUTH_TRUSTED_PROXY_CIDRS", CodeConfigEnvInvalid, problem.DetailInvalidValue,
			apiProd().with(env{"OCC_AUTH_TRUSTED_PROXY_CIDRS": "10.0.0.0/8,0.0.0.0/0"})},
		{"proxy every ipv6", "OCC_AUTH_TRUSTED_PROXY_CIDRS", CodeConfigEnvInvalid, problem.DetailInvalidValue,
			apiProd().with(env{"OCC_AUTH_TRUSTED_PROXY_CIDRS": "::/0"})},
		{"proxy every mapped ipv4", "OCC_AUTH_TRUSTED_PROXY_CIDRS", CodeConfigEnvInvalid, problem.DetailInvalidValue,
			apiProd().with(env{"OCC_AUTH_TRUSTED_PROXY_CIDRS": "::/64"})},
		{"proxy malformed", "OCC_AUTH_TRUSTED_PROXY_CIDRS", CodeConfigEnvInvalid, problem.DetailInvalidFormat,
			apiProd().with(env{"OCC_AUTH_TRUSTED_PROXY_CIDRS": "10.0.0.0/33"})},
		{"proxy empty entry", "OCC_AUTH_TRUSTED_PROXY_CIDRS", CodeConfigEnvInvalid, problem.DetailInvalidFormat,
			apiProd().with(env{"OCC_AUTH_TRUSTED_PROXY_CIDRS": "10.0.0.0/8,"})},
		{"preset without cidrs", "OCC_AUTH_TRUSTED_PROXY_PRESET", CodeConfigEnvInvalid, problem.DetailInvalidValue,
			apiProd().with(env{"OCC_AUTH_TRUSTED_PROXY_PRESET": "aws"})},
		{"generic without header", "OCC_AUTH_CLIENT_IP_HEADER", CodeConfigEnvInvalid, problem.DetailRequired,
			apiProd().with(env{"OCC_AUTH_TRUSTED_PROXY_CIDRS": "10.0.0.0/8", "OCC_AUTH_TRUSTED_PROXY_PRESET": "generic"})},
		{"generic with a credential header", "OCC_AUTH_CLIENT_IP_HEADER", CodeConfigEnvInvalid, problem.DetailInvalidValue,
			apiProd().with(env{"OCC_AUTH_TRUSTED_PROXY_CIDRS": "10.0.0.0/8", "OCC_AUTH_TRUSTED_PROXY_PRESET": "generic", "OCC_AUTH_CLIENT_IP_HEADER": "cookie"})},
		{"named preset with another header", "OCC_AUTH_CLIENT_IP_HEADER", CodeConfigEnvInvalid, problem.DetailInvalidValue,
			apiProd().with(env{"OCC_AUTH_TRUSTED_PROXY_CIDRS": "10.0.0.0/8", "OCC_AUTH_CLIENT_IP_HEADER": "x-real-ip"})},
		{"cli sessions word", "OCC_AUTH_CLI_SESSIONS", CodeConfigEnvInvalid, problem.DetailInvalidValue,
			apiProd().with(env{"OCC_AUTH_CLI_SESSIONS": "true"})},
		{"cli lifetime too short", "OCC_AUTH_CLI_SESSION_MAX_LIFETIME_SECONDS", CodeConfigEnvInvalid, problem.DetailInvalidValue,
			apiProd().with(env{"OCC_AUTH_CLI_SESSION_MAX_LIFETIME_SECONDS": "899"})},
		{"cli lifetime too long", "OCC_AUTH_CLI_SESSION_MAX_LIFETIME_SECONDS", CodeConfigEnvInvalid, problem.DetailInvalidValue,
			apiProd().with(env{"OCC_AUTH_CLI_SESSION_MAX_LIFETIME_SECONDS": "28801"})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := LoadAPI(MapLookup(c.env))
			var se *problem.Error
			if !errors.As(err, &se) {
				t.Fatalf("got %v, want a refusal", err)
			}
			want := []problem.Detail{{Path: "/env/" + c.variable, Code: c.detail}}
			if se.Code != c.code || !slices.Equal(se.Details, want) {
				t.Fatalf("got %s %+v (%s), want %s %+v", se.Code, se.Details, se.Message, c.code, want)
			}
			if !messagePattern.MatchString(se.Message) || !strings.Contains(se.Message, "OCC_") {
				t.Errorf("message %q", se.Message)
			}
			for _, secret := range []string{"gh-secret", "oidc-secret"} {
				if strings.Contains(se.Message, secret) {
					t.Errorf("message %q carries a secret", se.Message)
				}
			}
		})
	}
}
