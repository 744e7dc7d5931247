package cli

import (
	"github.com/openclaw/occ/internal/api"
	"github.com/openclaw/occ/internal/settings"
	"github.com/openclaw/occ/internal/signin"
)

// signInConfig builds the API's sign-in configuration from the validated settings: one provider per
// configured GitHub, Google or OIDC client, on their public endpoints.
func signInConfig(cfg settings.API) api.SignIn {
	s := cfg.SignIn
	out := api.SignIn{
		RecoveryUserID: s.RecoveryUserID, RecoveryOnly: s.PasswordSignIn == settings.PasswordSignInRecoveryOnly,
		TrustedProxy: s.TrustedProxy, CLISessions: s.CLISessions, CLISessionMaxLifetime: s.CLISessionMaxLifetime,
		CookieDomain: s.CookieDomain,
	}
	callback := func(name string) signin.Options {
		return signin.Options{CallbackURL: cfg.AuthBaseURL + "/api/auth/providers/" + name + "/callback"}
	}
	if s.GitHub != nil {
		out.Providers = append(out.Providers, signin.NewGitHub(*s.GitHub, signin.GitHubDotCom, callback(signin.GitHub)))
	}
	if s.Google != nil {
		out.Providers = append(out.Providers, signin.NewGoogle(*s.Google, signin.GoogleEndpoints, callback(signin.Google)))
	}
	if s.OIDC != nil {
		out.Providers = append(out.Providers, signin.NewOIDC(*s.OIDC, callback(signin.OIDC)))
		out.OIDCLabel = s.OIDC.DisplayName
	}
	return out
}
