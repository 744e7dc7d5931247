package api

import (
	"net/http"

	"github.com/openclaw/occ/internal/auth"
	"github.com/openclaw/occ/internal/schema"
	"github.com/openclaw/occ/internal/signin"
)

// Audit actions of the sign-in routes. Upstream's: authentication.login (the callback),
// openclaw.auth.accounts.<operation>, openclaw.auth.recovery.replace and
// openclaw.auth.cli-sessions.approve|deny|issue|revoke. Ours: the reads, start and result.
const (
	ActionProvidersRead      = "openclaw.auth.providers.read"
	ActionSignInStart        = "authentication.login.start"
	ActionSignInResult       = "authentication.login.result"
	ActionAccountsRead       = "openclaw.auth.accounts.read"
	ActionAccountsDisable    = "openclaw.auth.accounts.disable"
	ActionAccountsEnable     = "openclaw.auth.accounts.enable"
	ActionAccountsRevoke     = "openclaw.auth.accounts.revoke"
	ActionAccountsEnrol      = "openclaw.auth.accounts.enrol"
	ActionAccountsDetach     = "openclaw.auth.accounts.detach"
	ActionRecoveryRead       = "openclaw.auth.recovery.read"
	ActionRecoveryReplace    = "openclaw.auth.recovery.replace"
	ActionCLISessionsStart   = "openclaw.auth.cli-sessions.start"
	ActionCLISessionsIssue   = "openclaw.auth.cli-sessions.issue"
	ActionCLISessionsLookup  = "openclaw.auth.cli-sessions.lookup"
	ActionCLISessionsDecide  = "openclaw.auth.cli-sessions.decide"
	ActionCLISessionsApprove = "openclaw.auth.cli-sessions.approve"
	ActionCLISessionsDeny    = "openclaw.auth.cli-sessions.deny"
	ActionCLISessionsList    = "openclaw.auth.cli-sessions.list"
	ActionCLISessionsRead    = "openclaw.auth.cli-sessions.read"
	ActionCLISessionsRevoke  = "openclaw.auth.cli-sessions.revoke"
)

// ActionAttach is the audit action of attaching an identity of provider (github, google, oidc).
func ActionAttach(provider string) string { return "openclaw.auth.accounts." + provider }

var (
	expectedVersion   = describe(integer(1, 1<<31-1), "The account version just read (GET /api/auth/accounts/{userId}).")
	versionBody       = object(required("expectedVersion", expectedVersion))
	userIDSchema      = object(required("userId", idOf("usr")))
	accountPathParams = map[string]*schema.Schema{"userId": idOf("usr")}
	accountSchema     = object(
		required("userId", idOf("usr")),
		required("principalId", idOf("prn")),
		required("version", integer(1, 1<<53-1)),
		required("disabled", boolean()),
		required("methods", listOf(object(
			required("methodId", idOf("mth")),
			required("providerId", describe(str(1, 200), "credential for the local password; <provider>:<instance digest> for an external identity.")),
			required("subject", str(1, 255)),
		))),
	)
	recoverySchema = object(
		required("userId", idOf("usr")),
		required("principalId", idOf("prn")),
		required("methodId", idOf("mth")),
	)
	cliSessionSchema = object(
		required("id", idOf("cls")),
		required("clientLabel", str(1, 64)),
		required("createdAt", timestamp()),
		required("expiresAt", timestamp()),
		optional("namespaceId", idOf("ns")),
	)
	cliUserSchema  = object(required("id", idOf("usr")), required("email", str(3, 320)), required("name", name()))
	subjectSchemas = map[string]*schema.Schema{
		signin.GitHub: describe(pattern(`^[1-9][0-9]{0,19}$`, 0), "The numeric GitHub user id."),
		signin.Google: describe(pattern(`^[!-~]{1,255}$`, 255), "The ID token's sub claim."),
		signin.OIDC:   describe(pattern(`^[!-~]{1,255}$`, 255), "The ID token's sub claim for the configured issuer."),
	}
	// operationTitles spell the provider in upstream's operationIds (startOidcSignIn);
	// providerTitles in prose.
	operationTitles = map[string]string{signin.GitHub: "GitHub", signin.Google: "Google", signin.OIDC: "Oidc"}
	providerTitles  = map[string]string{signin.GitHub: "GitHub", signin.Google: "Google", signin.OIDC: "OIDC"}
)

// signInRoutes are the external sign-in, account control, recovery and CLI session routes.
var signInRoutes = buildSignInRoutes()

func buildSignInRoutes() []*Route {
	admin := []Permission{installationAdminister}
	routes := []*Route{{
		Method: http.MethodGet, Path: "/api/auth/providers", Action: ActionProvidersRead, OperationID: "getAuthProviders",
		Tag: "Authentication", Summary: "The browser sign-in methods this Installation offers.",
		Description: "password is false when only the recovery account may use a password; oidcSignIn names the OIDC button.",
		Auth:        auth.ModeAnonymous, Success: http.StatusOK, Response: object(
			required("password", boolean()), required("github", boolean()), required("google", boolean()),
			required("oidc", boolean()), required("sessionBinding", boolean()),
			optional("oidcSignIn", object(required("label", str(1, 40)), required("authorizationUrl", str(1, 2048))))),
		Handler: (*Server).getProviders,
	}}
	for _, p := range signin.Names {
		title, op := providerTitles[p], operationTitles[p]
		base := "/api/auth/providers/" + p
		routes = append(routes,
			&Route{
				Method: http.MethodPost, Path: base + "/start", Action: ActionSignInStart, OperationID: "start" + op + "SignIn",
				Tag: "Authentication", Summary: "Start a " + title + " sign-in.",
				Description: "Same-origin only. Answers the provider URL to open and a public attemptId, and sets the " +
					"browser-binding cookie; 404 when the provider is not configured.",
				Auth: auth.ModeAnonymous, ExactOrigin: true, Limited: true, Success: http.StatusOK,
				Response: object(required("url", str(1, 8192)), required("attemptId", pattern(`^[A-Za-z0-9_-]{43}$`, 0))),
				Handler:  (*Server).startSignIn,
			},
			&Route{
				Method: http.MethodGet, Path: base + "/callback", Action: ActionSignIn, OperationID: "complete" + op + "SignIn",
				Tag: "Authentication", Summary: "The " + title + " redirect back after sign-in.",
				Description: "Always 302: to /console/ with the session cookie and a two-minute login receipt, or to " +
					"/console/?authError=" + p + ". The query belongs to the provider.",
				Auth: auth.ModeAnonymous, OpenQuery: true, Success: http.StatusFound, Handler: (*Server).completeSignIn,
			},
			&Route{
				Method: http.MethodPost, Path: base + "/result", Action: ActionSignInResult, OperationID: "confirm" + op + "SignIn",
				Tag: "Authentication", Summary: "Trade the login receipt for the new session's key, once.",
				Auth: auth.ModeSession, Limited: true, Body: object(required("attemptId", pattern(`^[A-Za-z0-9_-]{43}$`, 0))),
				Success: http.StatusOK, Response: object(required("sessionKey", str(43, 43))), Handler: (*Server).confirmSignIn,
			},
		)
	}
	account := "/api/auth/accounts/{userId}"
	guarded := "Browser session and the exact Origin; needs GitHub, Google or OIDC sign-in (409 in the password-only profile)."
	mutation := guarded + " The caller must hold every grant of the account's Principal; the version advances."
	coverage := "The caller must hold every grant of the target account's Principal."
	routes = append(routes,
		&Route{
			Method: http.MethodGet, Path: account, Action: ActionAccountsRead, OperationID: "getAuthAccount", Tag: "Authentication",
			Summary: "An account's sign-in state: version, disabled, methods.", Description: guarded,
			Auth: auth.ModeSession, ExactOrigin: true, Scope: ScopeInstallation, Permissions: admin,
			PathParams: accountPathParams, Conflict: true, Tx: TxRead, Success: http.StatusOK, Response: accountSchema,
			Handler: (*Server).getAccount,
		},
		&Route{
			Method: http.MethodPost, Path: account + "/disable", Action: ActionAccountsDisable, OperationID: "disableAuthAccount",
			Tag: "Authentication", Summary: "Disable an account and end its sessions.", Description: mutation + " The recovery account refuses (409).",
			Auth: auth.ModeSession, ExactOrigin: true, Scope: ScopeInstallation, Permissions: admin, Coverage: coverage,
			PathParams: accountPathParams, Body: versionBody, Conflict: true, Tx: TxWrite, Success: http.StatusOK,
			Response: userIDSchema, Handler: (*Server).disableAccount,
		},
		&Route{
			Method: http.MethodPost, Path: account + "/enable", Action: ActionAccountsEnable, OperationID: "enableAuthAccount",
			Tag: "Authentication", Summary: "Re-enable a disabled account.", Description: mutation,
			Auth: auth.ModeSession, ExactOrigin: true, Scope: ScopeInstallation, Permissions: admin, Coverage: coverage,
			PathParams: accountPathParams, Body: versionBody, Conflict: true, Tx: TxWrite, Success: http.StatusOK,
			Response: userIDSchema, Handler: (*Server).enableAccount,
		},
		&Route{
			Method: http.MethodPost, Path: account + "/revoke", Action: ActionAccountsRevoke, OperationID: "revokeAuthAccountSessions",
			Tag: "Authentication", Summary: "End every session of an account; a fresh sign-in still works.", Description: mutation,
			Auth: auth.ModeSession, ExactOrigin: true, Scope: ScopeInstallation, Permissions: admin, Coverage: coverage,
			PathParams: accountPathParams, Body: versionBody, Conflict: true, Tx: TxWrite, Success: http.StatusOK,
			Response: userIDSchema, Handler: (*Server).revokeAccountSessions,
		},
		&Route{
			Method: http.MethodPost, Path: account + "/enrol", Action: ActionAccountsEnrol, OperationID: "enrolAuthAccount",
			Tag: "Authentication", Summary: "Enrol an account holding its Principal and one password.",
			Description: guarded + " OCC enrols every account when it is created, so created is false.",
			Auth:        auth.ModeSession, ExactOrigin: true, Scope: ScopeInstallation, Permissions: admin, Coverage: coverage,
			PathParams: accountPathParams, Conflict: true, Tx: TxWrite, Success: http.StatusOK,
			Response: object(required("userId", idOf("usr")), required("principalId", idOf("prn")),
				required("version", integer(1, 1<<53-1)), required("created", boolean())),
			Handler: (*Server).enrolAccount,
		},
		&Route{
			Method: http.MethodPost, Path: account + "/methods/{methodId}/detach", Action: ActionAccountsDetach, OperationID: "detachAuthMethod",
			Tag: "Authentication", Summary: "Detach an external identity and end every session of the account.",
			Description: mutation + " A password method refuses (409).",
			Auth:        auth.ModeSession, ExactOrigin: true, Scope: ScopeInstallation, Permissions: admin, Coverage: coverage,
			PathParams: map[string]*schema.Schema{"userId": idOf("usr"), "methodId": idOf("mth")}, Body: versionBody, Conflict: true,
			Tx: TxWrite, Success: http.StatusOK, Response: userIDSchema, Handler: (*Server).detachMethod,
		},
	)
	for _, p := range signin.Names {
		routes = append(routes, &Route{
			Method: http.MethodPost, Path: account + "/providers/" + p, Action: ActionAttach(p), OperationID: "attach" + operationTitles[p] + "Identity",
			Tag: "Authentication", Summary: "Attach a verified " + providerTitles[p] + " identity to an account.",
			Description: mutation + " The account's sessions end. A subject another account holds is 409; so is an unconfigured provider.",
			Auth:        auth.ModeSession, ExactOrigin: true, Scope: ScopeInstallation, Permissions: admin, Coverage: coverage,
			PathParams: accountPathParams, Body: object(required("expectedVersion", expectedVersion), required("subject", subjectSchemas[p])),
			Conflict: true, Tx: TxWrite, Success: http.StatusOK, Response: userIDSchema, Handler: (*Server).attachIdentity,
		})
	}
	routes = append(routes,
		&Route{
			Method: http.MethodGet, Path: "/api/auth/recovery", Action: ActionRecoveryRead, OperationID: "getAuthRecovery",
			Tag: "Authentication", Summary: "The recovery account designation.", Description: guarded,
			Auth: auth.ModeSession, ExactOrigin: true, Scope: ScopeInstallation, Permissions: admin, Conflict: true, Tx: TxRead,
			Statuses: upstreamNotFound, Success: http.StatusOK, Response: recoverySchema, Handler: (*Server).getRecovery,
		},
		&Route{
			Method: http.MethodPost, Path: "/api/auth/recovery", Action: ActionRecoveryReplace, OperationID: "replaceAuthRecovery",
			Tag: "Authentication", Summary: "Move the recovery designation to another local-password administrator.",
			Description: guarded + " expectedVersion is the target account's.",
			Auth:        auth.ModeSession, ExactOrigin: true, Scope: ScopeInstallation, Permissions: admin,
			Coverage: "The caller must hold every grant of the current recovery account's Principal.",
			Body:     object(required("userId", idOf("usr")), required("expectedCurrentUserId", idOf("usr")), required("expectedVersion", expectedVersion)),
			Conflict: true, Tx: TxWrite, Statuses: upstreamNotFound, Success: http.StatusOK,
			Response: object(required("userId", idOf("usr")), required("principalId", idOf("prn")), required("methodId", idOf("mth")),
				required("changed", boolean())),
			Handler: (*Server).replaceRecovery,
		},
	)
	cli := "Ours (upstream documents the route without an operationId). 404 when OCC_AUTH_CLI_SESSIONS=disabled."
	routes = append(routes,
		&Route{
			Method: http.MethodPost, Path: "/api/auth/cli/device-authorizations", Action: ActionCLISessionsStart,
			OperationID: "startCliDeviceAuthorization", Tag: "Authentication", Summary: "Start occ login (no credential).",
			Description: cli + " 30 a minute per client address; the code is valid 10 minutes.",
			Auth:        auth.ModeAnonymous, Limited: true,
			Body:    object(required("clientLabel", pattern(`^[ -~]{1,64}$`, 64)), optional("namespaceId", idOf("ns"))),
			Success: http.StatusCreated, Response: object(
				required("deviceCode", pattern(`^[A-Za-z0-9_-]{43}$`, 0)), required("userCode", pattern(`^[B-Z]{4}-[B-Z]{4}$`, 0)),
				required("verificationUri", str(1, 200)), required("interval", integer(1, 60)), required("expiresIn", integer(1, 600))),
			Handler: (*Server).startCLISignIn,
		},
		&Route{
			Method: http.MethodPost, Path: "/api/auth/cli/token", Action: ActionCLISessionsIssue, OperationID: "exchangeCliDeviceCode",
			Tag: "Authentication", Summary: "occ login's poll: the CLI session once approved.",
			Description: cli + " 400 AUTHORIZATION_PENDING, SLOW_DOWN, ACCESS_DENIED or EXPIRED_TOKEN; 409 CLI_SESSION_LIMIT.",
			Auth:        auth.ModeAnonymous, Limited: true, Conflict: true,
			Body:    object(required("deviceCode", pattern(`^[A-Za-z0-9_-]{43}$`, 0))),
			Success: http.StatusOK, Response: object(required("token", pattern(`^occcli_[A-Za-z0-9_-]{43}$`, 0)),
				required("session", cliSessionSchema), required("user", cliUserSchema)),
			Handler: (*Server).exchangeCLIDeviceCode,
		},
		&Route{
			Method: http.MethodPost, Path: "/api/auth/cli/device-authorizations/lookup", Action: ActionCLISessionsLookup,
			OperationID: "lookupCliDeviceAuthorization", Tag: "Authentication", Summary: "What the approval page is asked to approve.",
			Description: cli + " Browser session, exact Origin and its x-occ-session-key; 5 wrong codes a minute per account and address.",
			Auth:        auth.ModeSession, Limited: true, Body: object(required("userCode", str(1, 16))),
			Success: http.StatusOK, Response: object(required("clientLabel", str(1, 64)), required("requesterAddress", str(1, 64)),
				required("sameAddress", boolean()), optional("namespaceId", idOf("ns")), required("codeExpiresAt", timestamp()),
				required("sessionExpiresAt", timestamp())),
			Handler: (*Server).lookupCLIDeviceAuthorization,
		},
		&Route{
			Method: http.MethodPost, Path: "/api/auth/cli/device-authorizations/decide", Action: ActionCLISessionsDecide,
			OperationID: "decideCliDeviceAuthorization", Tag: "Authentication", Summary: "Approve or deny an occ login request.",
			Description: cli + " As lookup; audited as openclaw.auth.cli-sessions.approve or .deny. Deny is final.",
			Auth:        auth.ModeSession, Limited: true,
			Body:    object(required("userCode", str(1, 16)), required("decision", enum("approve", "deny"))),
			Success: http.StatusOK, Response: object(required("decision", enum("approve", "deny")), optional("sessionExpiresAt", timestamp())),
			Handler: (*Server).decideCLIDeviceAuthorization,
		},
		&Route{
			Method: http.MethodGet, Path: "/api/auth/cli-sessions", Action: ActionCLISessionsList, OperationID: "listCliSessions",
			Tag: "Authentication", Summary: "The signed-in person's own CLI sessions.", Description: cli,
			Auth: auth.ModeSession, Success: http.StatusOK, Response: listOf(cliSessionSchema), Handler: (*Server).listCLISessions,
		},
		&Route{
			Method: http.MethodDelete, Path: "/api/auth/cli-sessions/{cliSessionId}", Action: ActionCLISessionsRevoke,
			OperationID: "revokeCliSession", Tag: "Authentication", Summary: "Revoke one of the person's own CLI sessions.",
			Description: cli, Auth: auth.ModeSession, PathParams: map[string]*schema.Schema{"cliSessionId": idOf("cls")},
			Success: http.StatusOK, Response: object(required("id", idOf("cls")), required("revoked", boolean())),
			Handler: (*Server).revokeCLISession,
		},
		&Route{
			Method: http.MethodGet, Path: "/api/auth/cli-sessions/current", Action: ActionCLISessionsRead,
			OperationID: "getCurrentCliSession", Tag: "Authentication", Summary: "The calling CLI session (occ auth status).",
			Description: cli + " Only x-occ-cli-session.", Auth: auth.ModeAny, Success: http.StatusOK,
			Response: object(required("id", idOf("cls")), required("clientLabel", str(1, 64)), required("createdAt", timestamp()),
				required("expiresAt", timestamp()), optional("namespaceId", idOf("ns")), required("user", cliUserSchema)),
			Handler: (*Server).getCurrentCLISession,
		},
		&Route{
			Method: http.MethodDelete, Path: "/api/auth/cli-sessions/current", Action: ActionCLISessionsRevoke,
			OperationID: "endCurrentCliSession", Tag: "Authentication", Summary: "End the calling CLI session (occ logout).",
			Description: cli + " Only x-occ-cli-session.", Auth: auth.ModeAny, Success: http.StatusOK,
			Response: object(required("id", idOf("cls")), required("revoked", boolean())), Handler: (*Server).endCurrentCLISession,
		},
	)
	return routes
}
