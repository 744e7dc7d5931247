package signin

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"golang.org/x/oauth2"

	"github.com/openclaw/occ/internal/settings"
)

// GitHubEndpoints are where a GitHub App's user login happens.
type GitHubEndpoints struct {
	AuthorizationURL, TokenURL string
	// APIURL is the REST API root (GET /user, membership lookups), without a trailing slash.
	APIURL string
}

// GitHubDotCom are github.com's endpoints.
var GitHubDotCom = GitHubEndpoints{
	AuthorizationURL: "https://github.com/login/oauth/authorize",
	TokenURL:         "https://github.com/login/oauth/access_token",
	APIURL:           "https://api.github.com",
}

type github struct {
	cfg        settings.GitHubSignIn
	endpoints  GitHubEndpoints
	opts       Options
	instanceID string
	attemptKey string
}

// NewGitHub is GitHub sign-in with a GitHub App's client (no OAuth scopes are requested). The
// subject is the numeric GitHub user id, never the login. With an organization or team
// allowlist, only active members of one entry are accepted.
func NewGitHub(cfg settings.GitHubSignIn, endpoints GitHubEndpoints, opts Options) Provider {
	id := InstanceID(GitHub, cfg.ClientID)
	return &github{cfg: cfg, endpoints: endpoints, opts: opts, instanceID: id, attemptKey: id + ":" + digest(cfg.ClientSecret)}
}

func (g *github) Name() string       { return GitHub }
func (g *github) InstanceID() string { return g.instanceID }
func (g *github) AttemptKey() string { return g.attemptKey }

func (g *github) config() *oauth2.Config {
	return &oauth2.Config{
		ClientID: g.cfg.ClientID, ClientSecret: g.cfg.ClientSecret, RedirectURL: g.opts.CallbackURL,
		Endpoint: oauth2.Endpoint{AuthURL: g.endpoints.AuthorizationURL, TokenURL: g.endpoints.TokenURL, AuthStyle: oauth2.AuthStyleInParams},
	}
}

func (g *github) AuthorizationURL(_ context.Context, state, verifier, _ string) (string, error) {
	return g.config().AuthCodeURL(state, oauth2.S256ChallengeOption(verifier)), nil
}

func (g *github) Exchange(ctx context.Context, code, verifier, _ string) (Identity, error) {
	ctx, cancel := context.WithTimeout(ctx, g.opts.deadline())
	defer cancel()
	client, probe := g.opts.boundedClient()
	tok, err := g.config().Exchange(withClient(ctx, client), code, oauth2.VerifierOption(verifier))
	if err != nil {
		return Identity{}, tokenFailure(err, probe)
	}
	header := http.Header{
		"Authorization": {"Bearer " + tok.AccessToken},
		"Accept":        {"application/vnd.github+json"},
		"User-Agent":    {"occ"},
	}
	var user struct {
		ID    any    `json:"id"`
		Login string `json:"login"`
	}
	status, err := g.opts.getJSON(ctx, StepProfile, g.endpoints.APIURL+"/user", header, &user)
	if err != nil {
		return Identity{}, err
	}
	if status/100 != 2 {
		return Identity{}, rejected()
	}
	subject := githubSubject(user.ID)
	if subject == "" {
		return Identity{}, unavailable(Failure{Step: StepProfile, Cause: CauseMalformed})
	}
	if len(g.cfg.AllowedOrgs)+len(g.cfg.AllowedTeams) > 0 {
		if err := g.checkMembership(ctx, header, user.Login); err != nil {
			return Identity{}, err
		}
	}
	return Identity{Subject: subject}, nil
}

// checkMembership admits an active member of one allowlisted organization or team. The first
// match admits, even after another lookup failed; without a match, any failed lookup makes the
// refusal MEMBERSHIP_UNAVAILABLE instead of MEMBERSHIP_REQUIRED.
func (g *github) checkMembership(ctx context.Context, header http.Header, login string) error {
	var failure *Failure
	active := map[string]bool{}
	orgs := append([]string(nil), g.cfg.AllowedOrgs...)
	for _, team := range g.cfg.AllowedTeams {
		org, _, _ := strings.Cut(team, "/")
		orgs = append(orgs, org)
	}
	seen := map[string]bool{}
	for _, org := range orgs {
		if seen[org] {
			continue
		}
		seen[org] = true
		ok, f := g.activeMembership(ctx, header, g.endpoints.APIURL+"/user/memberships/orgs/"+url.PathEscape(org))
		if f != nil {
			failure = f
			continue
		}
		active[org] = ok
	}
	for _, org := range g.cfg.AllowedOrgs {
		if active[org] {
			return nil
		}
	}
	for _, team := range g.cfg.AllowedTeams {
		org, slug, _ := strings.Cut(team, "/")
		if !active[org] || login == "" {
			continue
		}
		ok, f := g.activeMembership(ctx, header, g.endpoints.APIURL+"/orgs/"+url.PathEscape(org)+"/teams/"+
			url.PathEscape(slug)+"/memberships/"+url.PathEscape(login))
		if f != nil {
			failure = f
			continue
		}
		if ok {
			return nil
		}
	}
	if failure != nil {
		return &Denial{Reason: ReasonMembershipUnavailable, Failure: failure}
	}
	return &Denial{Reason: ReasonMembershipRequired}
}

// activeMembership reads one membership: 200 with state active matches, 404 does not, anything
// else is a failed lookup.
func (g *github) activeMembership(ctx context.Context, header http.Header, rawURL string) (bool, *Failure) {
	var m struct {
		State string `json:"state"`
	}
	status, err := g.opts.getJSON(ctx, StepMembership, rawURL, header, &m)
	if err != nil {
		d := AsDenial(err)
		if d.Failure != nil {
			f := *d.Failure
			f.Step = StepMembership
			return false, &f
		}
		return false, &Failure{Step: StepMembership, Cause: CauseMalformed}
	}
	switch status {
	case http.StatusOK:
		return m.State == "active", nil
	case http.StatusNotFound:
		return false, nil
	}
	return false, &Failure{Step: StepMembership, Cause: CauseHTTPStatus, Status: status}
}

// githubSubject is the decimal user id: a positive integer of at most 20 digits.
func githubSubject(v any) string {
	switch id := v.(type) {
	case float64:
		if id >= 1 && id <= 1<<53 && id == float64(int64(id)) {
			return strconv.FormatInt(int64(id), 10)
		}
	case string:
		if n := len(id); n >= 1 && n <= 20 && id[0] != '0' && strings.Trim(id, "0123456789") == "" {
			return id
		}
	}
	return ""
}
