package settings

import (
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/net/publicsuffix"

	"github.com/openclaw/occ/internal/problem"
)

// CodeExternalSignInNativeAdminUnsupported refuses GitHub, Google or OIDC sign-in together with
// OCC_AGENT_NATIVE_ADMIN_ENABLED=true: external sign-in supports host-only session cookies only.
const CodeExternalSignInNativeAdminUnsupported = "EXTERNAL_SIGN_IN_NATIVE_ADMIN_UNSUPPORTED"

// Password sign-in postures (OCC_AUTH_PASSWORD_SIGN_IN).
const (
	PasswordSignInAll          = "all"
	PasswordSignInRecoveryOnly = "recovery-only"
)

// OIDC client authentication methods (OCC_AUTH_OIDC_TOKEN_AUTH).
const (
	TokenAuthClientSecretPost  = "client_secret_post"
	TokenAuthClientSecretBasic = "client_secret_basic"
)

// Trusted proxy presets (OCC_AUTH_TRUSTED_PROXY_PRESET) and the header each reads.
const (
	ProxyPresetIngressNginx = "ingress-nginx"
	ProxyPresetAWS          = "aws"
	ProxyPresetGeneric      = "generic"
	forwardedForHeader      = "x-forwarded-for"
)

// Defaults of the sign-in variables.
const (
	DefaultOIDCDisplayName       = "single sign-on"
	DefaultCLISessionMaxLifetime = 8 * time.Hour
	MinCLISessionMaxLifetime     = 15 * time.Minute
	maxGitHubAllowlistEntries    = 10
)

// SignIn is how people sign in to the API: the external providers (none, one or several), the
// recovery account, the password posture, the trusted proxies, CLI sessions and the cookie scope.
type SignIn struct {
	GitHub *GitHubSignIn
	Google *GoogleSignIn
	OIDC   *OIDCSignIn
	// RecoveryUserID is OCC_AUTH_GITHUB_RECOVERY_USER_ID: the account designated as the recovery
	// account on first start with a provider. Set exactly when a provider is.
	RecoveryUserID string
	// PasswordSignIn is OCC_AUTH_PASSWORD_SIGN_IN: PasswordSignInAll or PasswordSignInRecoveryOnly.
	PasswordSignIn string
	// TrustedProxy is the ingress whose forwarded client address is believed (production only);
	// nil when none is configured.
	TrustedProxy *TrustedProxy
	// CLISessions is OCC_AUTH_CLI_SESSIONS=enabled.
	CLISessions bool
	// CLISessionMaxLifetime is OCC_AUTH_CLI_SESSION_MAX_LIFETIME_SECONDS.
	CLISessionMaxLifetime time.Duration
	// NativeAdmin is OCC_AGENT_NATIVE_ADMIN_ENABLED.
	NativeAdmin bool
	// CookieDomain is OCC_AUTH_COOKIE_DOMAIN (native admin only): the shared parent domain the
	// session cookie is scoped to.
	CookieDomain string
}

// redacted is a copy without the client secrets.
func (s SignIn) redacted() SignIn {
	if s.GitHub != nil {
		g := *s.GitHub
		g.ClientSecret = redact(g.ClientSecret)
		s.GitHub = &g
	}
	if s.Google != nil {
		g := *s.Google
		g.ClientSecret = redact(g.ClientSecret)
		s.Google = &g
	}
	if s.OIDC != nil {
		o := *s.OIDC
		o.ClientSecret = redact(o.ClientSecret)
		s.OIDC = &o
	}
	return s
}

// External reports whether any external provider is configured.
func (s SignIn) External() bool { return s.GitHub != nil || s.Google != nil || s.OIDC != nil }

// GitHubSignIn is a GitHub App used for login.
type GitHubSignIn struct {
	ClientID, ClientSecret string
	// AllowedOrgs and AllowedTeams (org/team-slug), lowercased: when either is set, only active
	// members of one entry may sign in with GitHub.
	AllowedOrgs, AllowedTeams []string
}

// GoogleSignIn is a Google OAuth web client.
type GoogleSignIn struct {
	ClientID, ClientSecret string
	// AllowedDomains, lowercased: when set, the ID token's hd must be one of them and its email
	// verified.
	AllowedDomains []string
}

// OIDCSignIn is one generic OpenID provider. Without explicit URLs the endpoints are discovered
// from the issuer.
type OIDCSignIn struct {
	Issuer                              string
	AuthorizationURL, TokenURL, JWKSURL string
	ClientID, ClientSecret              string
	TokenAuth                           string
	DisplayName                         string
}

// Discovered reports whether the endpoints come from the issuer's discovery document.
func (o OIDCSignIn) Discovered() bool { return o.AuthorizationURL == "" }

// TrustedProxy is OCC_AUTH_TRUSTED_PROXY_CIDRS with its preset and the header it reads.
type TrustedProxy struct {
	CIDRs  []netip.Prefix
	Preset string
	// Header is the lowercase request header carrying the client address.
	Header string
}

var (
	accountIDShape   = regexp.MustCompile(`^usr_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	namespaceIDShape = regexp.MustCompile(`^ns_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	githubOrgShape   = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]{0,38})$`)
	githubTeamShape  = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]{0,38})/[a-z0-9][a-z0-9_-]{0,99}$`)
	headerShape      = regexp.MustCompile("^[a-z0-9!#$%&'*+.^_`|~-]{1,64}$")
)

// ValidNamespaceID reports whether s has the shape of a Namespace id (ns_<uuid v4>).
func ValidNamespaceID(s string) bool { return namespaceIDShape.MatchString(s) }

// refusedClientAddressHeaders carry credentials, routing or browser state: never a client address.
var refusedClientAddressHeaders = map[string]bool{
	"cookie": true, "authorization": true, "host": true, "origin": true, "forwarded": true,
	"x-api-key": true, "x-occ-session-key": true, "x-occ-cli-session": true,
}

// signIn reads every sign-in variable. Everything is refused here, before any database connection:
// partial provider configuration, a recovery-only posture without a provider, external sign-in
// with native admin, and an invalid cookie domain.
func (r *reader) signIn(mode Mode, baseURL string) SignIn {
	var s SignIn
	s.GitHub = r.githubSignIn()
	s.Google = r.googleSignIn()
	s.OIDC = r.oidcSignIn()
	s.RecoveryUserID = r.recoveryUserID(s.External())
	s.PasswordSignIn = r.passwordSignIn(s.External())
	if mode == Production {
		s.TrustedProxy = r.trustedProxy()
	}
	s.CLISessions = r.enabledDisabled("OCC_AUTH_CLI_SESSIONS", true)
	s.CLISessionMaxLifetime = time.Duration(r.boundedInt("OCC_AUTH_CLI_SESSION_MAX_LIFETIME_SECONDS",
		int(DefaultCLISessionMaxLifetime/time.Second), int(MinCLISessionMaxLifetime/time.Second),
		int(DefaultCLISessionMaxLifetime/time.Second))) * time.Second
	s.NativeAdmin = r.boolean("OCC_AGENT_NATIVE_ADMIN_ENABLED", false)
	if !r.failed() && s.NativeAdmin && s.External() {
		r.fail("OCC_AGENT_NATIVE_ADMIN_ENABLED", CodeExternalSignInNativeAdminUnsupported, problem.DetailInvalidValue,
			"External sign-in supports host-only cookies only: unset OCC_AGENT_NATIVE_ADMIN_ENABLED or the GitHub and Google and OIDC settings.")
	}
	s.CookieDomain = r.cookieDomain(s.NativeAdmin, baseURL)
	return s
}

// pair reads a client id and secret; both or neither. It reports whether they are set.
func (r *reader) clientPair(idName, secretName string) (id, secret string, set bool) {
	id, idSet := r.optional(idName, CodeConfigEnvInvalid)
	secret, secretSet := r.optional(secretName, CodeConfigEnvInvalid)
	switch {
	case r.failed():
		return "", "", false
	case idSet && !secretSet:
		r.fail(secretName, CodeConfigEnvInvalid, problem.DetailRequired, secretName+" must be set together with "+idName+".")
	case secretSet && !idSet:
		r.fail(idName, CodeConfigEnvInvalid, problem.DetailRequired, idName+" must be set together with "+secretName+".")
	}
	if r.failed() {
		return "", "", false
	}
	if strings.TrimSpace(id) != id || strings.ContainsAny(id, "\r\n\t ") || len(id) > 512 {
		r.fail(idName, CodeConfigEnvInvalid, problem.DetailInvalidFormat, idName+" must be one printable token without spaces.")
		return "", "", false
	}
	return id, secret, idSet
}

func (r *reader) githubSignIn() *GitHubSignIn {
	id, secret, set := r.clientPair("OCC_AUTH_GITHUB_CLIENT_ID", "OCC_AUTH_GITHUB_CLIENT_SECRET")
	orgs := r.list("OCC_AUTH_GITHUB_ALLOWED_ORGS", set, "OCC_AUTH_GITHUB_CLIENT_ID", githubOrgShape,
		"OCC_AUTH_GITHUB_ALLOWED_ORGS must list GitHub organization logins separated by commas.")
	teams := r.list("OCC_AUTH_GITHUB_ALLOWED_TEAMS", set, "OCC_AUTH_GITHUB_CLIENT_ID", githubTeamShape,
		"OCC_AUTH_GITHUB_ALLOWED_TEAMS must list org/team-slug entries separated by commas.")
	if !r.failed() && len(orgs)+len(teams) > maxGitHubAllowlistEntries {
		r.fail("OCC_AUTH_GITHUB_ALLOWED_TEAMS", CodeConfigEnvInvalid, problem.DetailInvalidValue,
			"OCC_AUTH_GITHUB_ALLOWED_ORGS and OCC_AUTH_GITHUB_ALLOWED_TEAMS list at most 10 entries together.")
	}
	if r.failed() || !set {
		return nil
	}
	return &GitHubSignIn{ClientID: id, ClientSecret: secret, AllowedOrgs: orgs, AllowedTeams: teams}
}

func (r *reader) googleSignIn() *GoogleSignIn {
	id, secret, set := r.clientPair("OCC_AUTH_GOOGLE_CLIENT_ID", "OCC_AUTH_GOOGLE_CLIENT_SECRET")
	domains := r.list("OCC_AUTH_GOOGLE_ALLOWED_DOMAINS", set, "OCC_AUTH_GOOGLE_CLIENT_ID", nil,
		"OCC_AUTH_GOOGLE_ALLOWED_DOMAINS must list DNS domain names separated by commas.")
	if r.failed() || !set {
		return nil
	}
	return &GoogleSignIn{ClientID: id, ClientSecret: secret, AllowedDomains: domains}
}

// list reads an optional comma-separated list of lowercased entries matching shape (a DNS name when
// shape is nil). It may be set only when its feature (enabledBy) is.
func (r *reader) list(name string, feature bool, enabledBy string, shape *regexp.Regexp, message string) []string {
	v, ok := r.optional(name, CodeConfigEnvInvalid)
	if !ok {
		return nil
	}
	if !feature {
		r.fail(name, CodeConfigEnvInvalid, problem.DetailInvalidValue, name+" requires "+enabledBy+".")
		return nil
	}
	var out []string
	for _, entry := range strings.Split(v, ",") {
		entry = strings.ToLower(strings.TrimSpace(entry))
		valid := shape != nil && shape.MatchString(entry) || shape == nil && isDNSName(entry)
		if !valid {
			r.fail(name, CodeConfigEnvInvalid, problem.DetailInvalidFormat, message)
			return nil
		}
		out = append(out, entry)
	}
	return out
}

func (r *reader) oidcSignIn() *OIDCSignIn {
	const (
		issuerName = "OCC_AUTH_OIDC_ISSUER"
		authName   = "OCC_AUTH_OIDC_AUTHORIZATION_URL"
		tokenName  = "OCC_AUTH_OIDC_TOKEN_URL"
		jwksName   = "OCC_AUTH_OIDC_JWKS_URL"
	)
	issuer, issuerSet := r.optional(issuerName, CodeConfigEnvInvalid)
	var urls [3]string
	var setCount int
	for i, n := range []string{authName, tokenName, jwksName} {
		var set bool
		if urls[i], set = r.optional(n, CodeConfigEnvInvalid); set {
			setCount++
		}
	}
	id, secret, clientSet := r.clientPair("OCC_AUTH_OIDC_CLIENT_ID", "OCC_AUTH_OIDC_CLIENT_SECRET")
	tokenAuth := r.enum("OCC_AUTH_OIDC_TOKEN_AUTH", TokenAuthClientSecretPost, TokenAuthClientSecretPost, TokenAuthClientSecretBasic)
	displayName, displaySet := r.optional("OCC_AUTH_OIDC_DISPLAY_NAME", CodeConfigEnvInvalid)
	if r.failed() {
		return nil
	}
	switch {
	case !issuerSet && !clientSet && setCount == 0:
		if displaySet || tokenAuth != TokenAuthClientSecretPost {
			name := "OCC_AUTH_OIDC_DISPLAY_NAME"
			if !displaySet {
				name = "OCC_AUTH_OIDC_TOKEN_AUTH"
			}
			r.fail(name, CodeConfigEnvInvalid, problem.DetailInvalidValue, name+" requires OCC_AUTH_OIDC_ISSUER.")
		}
		return nil
	case !issuerSet:
		r.fail(issuerName, CodeConfigEnvInvalid, problem.DetailRequired, "OIDC sign-in requires OCC_AUTH_OIDC_ISSUER.")
		return nil
	case !clientSet:
		r.fail("OCC_AUTH_OIDC_CLIENT_ID", CodeConfigEnvInvalid, problem.DetailRequired, "OIDC sign-in requires OCC_AUTH_OIDC_CLIENT_ID and OCC_AUTH_OIDC_CLIENT_SECRET.")
		return nil
	case setCount != 0 && setCount != 3:
		for i, n := range []string{authName, tokenName, jwksName} {
			if urls[i] == "" {
				r.fail(n, CodeConfigEnvInvalid, problem.DetailRequired,
					"Set OCC_AUTH_OIDC_AUTHORIZATION_URL and OCC_AUTH_OIDC_TOKEN_URL and OCC_AUTH_OIDC_JWKS_URL together or none of them to discover them from the issuer.")
				return nil
			}
		}
	}
	issuerOrigin := r.providerURL(issuerName, issuer, "")
	for i, n := range []string{authName, tokenName, jwksName} {
		if urls[i] != "" {
			r.providerURL(n, urls[i], issuerOrigin)
		}
	}
	if !displaySet {
		displayName = DefaultOIDCDisplayName
	} else if n := utf8.RuneCountInString(displayName); n > 40 || strings.IndexFunc(displayName, func(c rune) bool { return c < 0x20 || c == 0x7f || (c >= 0x80 && c <= 0x9f) }) >= 0 {
		r.fail("OCC_AUTH_OIDC_DISPLAY_NAME", CodeConfigEnvInvalid, problem.DetailInvalidValue,
			"OCC_AUTH_OIDC_DISPLAY_NAME must be 1 to 40 printable characters.")
	}
	if r.failed() {
		return nil
	}
	return &OIDCSignIn{Issuer: issuer, AuthorizationURL: urls[0], TokenURL: urls[1], JWKSURL: urls[2],
		ClientID: id, ClientSecret: secret, TokenAuth: tokenAuth, DisplayName: displayName}
}

// providerURL checks an OIDC URL: https (http only for a loopback host), no userinfo, query or
// fragment, and, when sameOrigin is set, the issuer's origin. It returns the URL's origin.
func (r *reader) providerURL(name, raw, sameOrigin string) string {
	message := name + " must be an https URL without credentials query or fragment: http only on a loopback host."
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Opaque != "" || strings.TrimSpace(raw) != raw {
		r.fail(name, CodeConfigEnvInvalid, problem.DetailInvalidFormat, message)
		return ""
	}
	loopback := u.Hostname() == "localhost" || u.Hostname() == "127.0.0.1" || u.Hostname() == "::1"
	if !(u.Scheme == "https" || u.Scheme == "http" && loopback) || u.User != nil || u.RawQuery != "" || u.ForceQuery || strings.Contains(raw, "#") {
		r.fail(name, CodeConfigEnvInvalid, problem.DetailInvalidValue, message)
		return ""
	}
	origin := u.Scheme + "://" + strings.ToLower(u.Host)
	if sameOrigin != "" && origin != sameOrigin {
		r.fail(name, CodeConfigEnvInvalid, problem.DetailInvalidValue, name+" must have the origin of OCC_AUTH_OIDC_ISSUER.")
		return ""
	}
	return origin
}

func (r *reader) recoveryUserID(external bool) string {
	const name = "OCC_AUTH_GITHUB_RECOVERY_USER_ID"
	v, ok := r.optional(name, CodeConfigEnvInvalid)
	switch {
	case r.failed():
		return ""
	case !ok && external:
		r.fail(name, CodeConfigEnvInvalid, problem.DetailRequired,
			"External sign-in requires OCC_AUTH_GITHUB_RECOVERY_USER_ID: the recovery account.")
	case ok && !external:
		r.fail(name, CodeConfigEnvInvalid, problem.DetailInvalidValue, name+" requires GitHub or Google or OIDC sign-in.")
	case ok && !accountIDShape.MatchString(v):
		r.fail(name, CodeConfigEnvInvalid, problem.DetailInvalidFormat, name+" must be an account id: usr_ and a UUID.")
	default:
		return v
	}
	return ""
}

func (r *reader) passwordSignIn(external bool) string {
	const name = "OCC_AUTH_PASSWORD_SIGN_IN"
	v := r.enum(name, PasswordSignInAll, PasswordSignInAll, PasswordSignInRecoveryOnly)
	if !r.failed() && v == PasswordSignInRecoveryOnly && !external {
		r.fail(name, CodeConfigEnvInvalid, problem.DetailInvalidValue,
			"OCC_AUTH_PASSWORD_SIGN_IN recovery-only requires GitHub or Google or OIDC sign-in.")
		return ""
	}
	return v
}

// enum reads an optional variable that must be one of values; unset takes def.
func (r *reader) enum(name, def string, values ...string) string {
	v, ok := r.optional(name, CodeConfigEnvInvalid)
	if r.failed() {
		return ""
	}
	if !ok {
		return def
	}
	for _, allowed := range values {
		if v == allowed {
			return v
		}
	}
	r.fail(name, CodeConfigEnvInvalid, problem.DetailInvalidValue, name+" must be "+strings.Join(values, " or ")+".")
	return ""
}

func (r *reader) enabledDisabled(name string, def bool) bool {
	d := "disabled"
	if def {
		d = "enabled"
	}
	return r.enum(name, d, "enabled", "disabled") == "enabled"
}

func (r *reader) trustedProxy() *TrustedProxy {
	const (
		cidrsName  = "OCC_AUTH_TRUSTED_PROXY_CIDRS"
		presetName = "OCC_AUTH_TRUSTED_PROXY_PRESET"
		headerName = "OCC_AUTH_CLIENT_IP_HEADER"
	)
	rawCIDRs, cidrsSet := r.optional(cidrsName, CodeConfigEnvInvalid)
	_, presetSet := r.get(presetName)
	rawHeader, headerSet := r.optional(headerName, CodeConfigEnvInvalid)
	preset := r.enum(presetName, ProxyPresetIngressNginx, ProxyPresetIngressNginx, ProxyPresetAWS, ProxyPresetGeneric)
	if r.failed() {
		return nil
	}
	if !cidrsSet {
		if presetSet || headerSet {
			name := presetName
			if !presetSet {
				name = headerName
			}
			r.fail(name, CodeConfigEnvInvalid, problem.DetailInvalidValue, name+" requires OCC_AUTH_TRUSTED_PROXY_CIDRS.")
		}
		return nil
	}
	p := &TrustedProxy{Preset: preset, Header: forwardedForHeader}
	switch {
	case preset == ProxyPresetGeneric && !headerSet:
		r.fail(headerName, CodeConfigEnvInvalid, problem.DetailRequired, "The generic trusted proxy preset requires OCC_AUTH_CLIENT_IP_HEADER.")
	case preset == ProxyPresetGeneric && (!headerShape.MatchString(rawHeader) || refusedClientAddressHeaders[rawHeader]):
		r.fail(headerName, CodeConfigEnvInvalid, problem.DetailInvalidValue,
			"OCC_AUTH_CLIENT_IP_HEADER must be a lowercase header name that carries no credential or routing.")
	case preset == ProxyPresetGeneric:
		p.Header = rawHeader
	case headerSet && rawHeader != forwardedForHeader:
		r.fail(headerName, CodeConfigEnvInvalid, problem.DetailInvalidValue,
			"OCC_AUTH_CLIENT_IP_HEADER must be x-forwarded-for with a named preset: use generic for another header.")
	}
	for _, entry := range strings.Split(rawCIDRs, ",") {
		if r.failed() {
			return nil
		}
		prefix, err := parseTrustedCIDR(strings.TrimSpace(entry))
		if err != "" {
			detail := problem.DetailInvalidFormat
			if err == "all" {
				detail = problem.DetailInvalidValue
			}
			r.fail(cidrsName, CodeConfigEnvInvalid, detail,
				"OCC_AUTH_TRUSTED_PROXY_CIDRS must list CIDRs separated by commas and none may cover every IPv4 or IPv6 address.")
			return nil
		}
		p.CIDRs = append(p.CIDRs, prefix)
	}
	return p
}

// parseTrustedCIDR parses one proxy CIDR (a bare address is a single host). IPv4-mapped IPv6
// addresses count as IPv4. A prefix that covers every IPv4 or every IPv6 address is refused
// ("all"); anything unparsable is "format".
func parseTrustedCIDR(entry string) (netip.Prefix, string) {
	if entry == "" {
		return netip.Prefix{}, "format"
	}
	addrPart, bitsPart, hasBits := strings.Cut(entry, "/")
	addr, err := netip.ParseAddr(addrPart)
	if err != nil || addr.Zone() != "" {
		return netip.Prefix{}, "format"
	}
	mapped := addr.Is4In6()
	addr = addr.Unmap()
	bits := addr.BitLen()
	if hasBits {
		n, err := strconv.Atoi(bitsPart)
		if err != nil || !isDecimal(bitsPart) || n > addr.BitLen() && !mapped || n > 128 {
			return netip.Prefix{}, "format"
		}
		if mapped {
			n -= 96
			if n < 0 {
				return netip.Prefix{}, "all"
			}
		}
		bits = n
	}
	if bits == 0 {
		return netip.Prefix{}, "all"
	}
	// An IPv6 prefix of ::ffff:0:0/96 or shorter that contains the mapped range trusts every IPv4
	// peer.
	if addr.Is6() && bits <= 96 {
		if netip.PrefixFrom(addr, bits).Masked().Contains(netip.MustParseAddr("::ffff:0.0.0.0")) {
			return netip.Prefix{}, "all"
		}
	}
	return netip.PrefixFrom(addr, bits).Masked(), ""
}

// cookieDomain reads OCC_AUTH_COOKIE_DOMAIN: required with native admin, unset otherwise; a DNS
// name that is not a public suffix and contains the base URL host, on an https base URL.
func (r *reader) cookieDomain(nativeAdmin bool, baseURL string) string {
	const name = "OCC_AUTH_COOKIE_DOMAIN"
	v, ok := r.optional(name, CodeAuthBaseURLInvalid)
	switch {
	case r.failed():
		return ""
	case !nativeAdmin && ok:
		r.fail(name, CodeAuthBaseURLInvalid, problem.DetailInvalidValue, name+" must be unset when OCC_AGENT_NATIVE_ADMIN_ENABLED is false.")
		return ""
	case !nativeAdmin:
		return ""
	case !ok:
		r.fail(name, CodeAuthBaseURLInvalid, problem.DetailRequired, name+" must be explicitly configured when native admin is enabled.")
		return ""
	}
	if !isDNSName(v) {
		r.fail(name, CodeAuthBaseURLInvalid, problem.DetailInvalidFormat, name+" must be a lowercase DNS domain name.")
		return ""
	}
	if suffix, _ := publicsuffix.PublicSuffix(v); suffix == v {
		r.fail(name, CodeAuthBaseURLInvalid, problem.DetailInvalidValue, name+" must not be a public suffix.")
		return ""
	}
	host := strings.TrimPrefix(baseURL, "https://")
	if !strings.HasPrefix(baseURL, "https://") {
		r.fail(name, CodeAuthBaseURLInvalid, problem.DetailInvalidValue, name+" requires an https OCC_AUTH_BASE_URL for Secure session cookies.")
		return ""
	}
	if i := strings.LastIndexByte(host, ':'); i >= 0 && !strings.HasSuffix(host, "]") {
		host = host[:i]
	}
	if host != v && !strings.HasSuffix(host, "."+v) {
		r.fail(name, CodeAuthBaseURLInvalid, problem.DetailInvalidValue, name+" must contain the host of OCC_AUTH_BASE_URL.")
		return ""
	}
	return v
}

// isDNSName accepts lowercase letters, digits and inner hyphens in dot-separated labels of 1..63,
// at least two labels, 253 characters in all, and not an IPv4 address.
func isDNSName(s string) bool {
	if len(s) == 0 || len(s) > 253 {
		return false
	}
	labels := strings.Split(s, ".")
	if len(labels) < 2 {
		return false
	}
	for _, l := range labels {
		if len(l) == 0 || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return !isDecimal(labels[len(labels)-1])
}
