package api_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/openclaw/occ/internal/api"
	"github.com/openclaw/occ/internal/iam"
	"github.com/openclaw/occ/internal/settings"
	"github.com/openclaw/occ/internal/signin"
)

// unreachable is an address nothing listens on: the offline providers never need their endpoints
// (attaching an identity or reading an account calls no provider).
const unreachable = "http://127.0.0.1:9"

// withOfflineSignIn configures GitHub, Google and OIDC sign-in with unreachable endpoints and the
// bootstrap administrator as the recovery account: the account routes leave the password-only
// profile.
func withOfflineSignIn(e *env, cfg *api.Config) {
	opts := func(name string) signin.Options {
		return signin.Options{CallbackURL: testOrigin + "/api/auth/providers/" + name + "/callback"}
	}
	endpoints := signin.Endpoints{Issuer: unreachable, AuthorizationURL: unreachable + "/auth", TokenURL: unreachable + "/token", JWKSURL: unreachable + "/keys"}
	cfg.SignIn = api.SignIn{
		Providers: []signin.Provider{
			signin.NewGitHub(settings.GitHubSignIn{ClientID: "offline-github", ClientSecret: "s"},
				signin.GitHubEndpoints{AuthorizationURL: unreachable + "/login", TokenURL: unreachable + "/token", APIURL: unreachable}, opts(signin.GitHub)),
			signin.NewGoogle(settings.GoogleSignIn{ClientID: "offline-google", ClientSecret: "s"}, endpoints, opts(signin.Google)),
			signin.NewOIDC(settings.OIDCSignIn{Issuer: unreachable, AuthorizationURL: endpoints.AuthorizationURL, TokenURL: endpoints.TokenURL,
				JWKSURL: endpoints.JWKSURL, ClientID: "offline-oidc", ClientSecret: "s", TokenAuth: settings.TokenAuthClientSecretPost}, opts(signin.OIDC)),
		},
		RecoveryUserID: e.adminAccount, OIDCLabel: "SSO", CLISessions: true,
	}
}

func githubSubject() string { return fmt.Sprint(rand.Int64N(1<<40) + 1) }

// signInCases are the matrix cases of the account and recovery routes: each acts on a fresh
// account without grants, so the takeover rule (every grant of the target) holds for any caller.
func signInCases(e *env) map[string]func() matrixCase {
	ins := e.installationID
	admin := []grantSpec{installationGrant(ins, iam.ActionAdminister)}
	target := func() identity { return e.newHuman("target-" + randomSuffix() + "@example.com") }
	accountPath := func(t identity) string { return "/api/auth/accounts/" + t.account }
	v1 := map[string]any{"expectedVersion": 1}
	cases := map[string]func() matrixCase{
		"GET /api/auth/accounts/{userId}": func() matrixCase {
			return matrixCase{method: "GET", path: accountPath(target()), human: true, need: admin, success: 200}
		},
		"POST /api/auth/accounts/{userId}/disable": func() matrixCase {
			return matrixCase{method: "POST", path: accountPath(target()) + "/disable", body: v1, human: true, need: admin, success: 200}
		},
		"POST /api/auth/accounts/{userId}/enable": func() matrixCase {
			t := target()
			e.exec(`UPDATE occ.accounts SET disabled = true, version = 2 WHERE id = $1`, t.account)
			return matrixCase{method: "POST", path: accountPath(t) + "/enable", body: map[string]any{"expectedVersion": 2}, human: true, need: admin, success: 200}
		},
		"POST /api/auth/accounts/{userId}/revoke": func() matrixCase {
			return matrixCase{method: "POST", path: accountPath(target()) + "/revoke", body: v1, human: true, need: admin, success: 200}
		},
		"POST /api/auth/accounts/{userId}/enrol": func() matrixCase {
			return matrixCase{method: "POST", path: accountPath(target()) + "/enrol", human: true, need: admin, success: 200}
		},
		"POST /api/auth/accounts/{userId}/methods/{methodId}/detach": func() matrixCase {
			t := target()
			r := e.expect(e.do(req{method: "POST", path: accountPath(t) + "/providers/github", cookie: e.adminCookie(), origin: testOrigin,
				body: map[string]any{"expectedVersion": 1, "subject": githubSubject()}}), 200)
			_ = r
			method := e.identityMethod(t.account)
			return matrixCase{method: "POST", path: accountPath(t) + "/methods/" + method + "/detach", body: map[string]any{"expectedVersion": 2},
				human: true, need: admin, success: 200}
		},
		"GET /api/auth/recovery": func() matrixCase {
			return matrixCase{method: "GET", path: "/api/auth/recovery", human: true, need: admin, success: 200}
		},
		"POST /api/auth/recovery": func() matrixCase {
			// The holder and the new account hold exactly Installation administer, which the
			// caller's grant covers.
			holder, next := target(), target()
			for _, id := range []identity{holder, next} {
				e.grant(id.id, "", iam.KindInstallation, ins, perm(iam.ActionAdminister, iam.KindInstallation))
			}
			e.exec(`UPDATE occ.recovery_accounts SET account_id = $1`, holder.account)
			return matrixCase{method: "POST", path: "/api/auth/recovery", human: true, need: admin, success: 200,
				body: map[string]any{"userId": next.account, "expectedCurrentUserId": holder.account, "expectedVersion": 1}}
		},
	}
	for _, p := range signin.Names {
		subject := func() string {
			if p == signin.GitHub {
				return githubSubject()
			}
			return "subject-" + randomSuffix()
		}
		cases["POST /api/auth/accounts/{userId}/providers/"+p] = func() matrixCase {
			return matrixCase{method: "POST", path: accountPath(target()) + "/providers/" + p, human: true, need: admin, success: 200,
				body: map[string]any{"expectedVersion": 1, "subject": subject()}}
		}
	}
	return cases
}

// adminCookie signs the bootstrap administrator in (a fresh session each time).
func (e *env) adminCookie() string {
	e.t.Helper()
	return e.signIn(adminEmail, adminPass)
}

// identityMethod is the method id of the account's only external identity.
func (e *env) identityMethod(accountID string) string {
	e.t.Helper()
	var id string
	if err := e.owner.QueryRow(ctxb(), `SELECT id FROM occ.account_identities WHERE account_id = $1`, accountID).Scan(&id); err != nil {
		e.t.Fatal(err)
	}
	return id
}
