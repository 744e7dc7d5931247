package api_test

import (
	"encoding/json"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/settings"
	"github.com/openclaw/occ/internal/signin"
	"github.com/openclaw/occ/internal/testkit/oidctest"
)

// TestConcurrentSignInResults is TestConcurrentMutations for the provider result routes, which
// need a sign-in completed through the provider's redirect and so a provider of their own: 20
// identical trades of one login receipt for the session key have one winner; the others answer
// 401 (receipt used) or 429 (too many at once); nothing is audited, and the receipt stays used.
func TestConcurrentSignInResults(t *testing.T) {
	t.Parallel()
	for _, p := range signin.Names {
		t.Run(p, func(t *testing.T) {
			var rig *oidcRig
			switch p {
			case signin.GitHub:
				var gh *fakeGitHub
				rig, gh = githubRig(t, settings.GitHubSignIn{ClientID: "Iv1.race", ClientSecret: "gh-secret"}, nil)
				rig.attach("4242")
				gh.signInAs(4242, "racer")
			default:
				rig = newOIDCRig(t, rigOptions{google: p == signin.Google})
				rig.attach("racer-0001")
				rig.op.LoginAs("racer-0001")
			}
			key := "POST /api/auth/providers/" + p + "/result"
			r := rig.receiptRequest()
			runConcCase(t, rig.e, routeOf(key), concCase{request: r, outcome: oneWinner,
				losers: []int{http.StatusUnauthorized, http.StatusTooManyRequests}, events: map[string]int{},
				stored: func(t *testing.T, _ int, _ []resp) {
					if again := doHTTP(t, rig.e.http.URL, r); again.status != http.StatusUnauthorized {
						t.Errorf("the receipt traded again after the race: %d %s", again.status, again.raw)
					}
				}})
		})
	}
}

// receiptRequest signs in through the rig's provider (its user set beforehand) and returns the
// result request of the starting tab: its attemptId, with the session and receipt cookies.
func (r *oidcRig) receiptRequest() req {
	t := r.e.t
	t.Helper()
	jar, _ := cookiejar.New(nil)
	start := r.post(jar, "/api/auth/providers/"+r.provider+"/start", nil)
	var started struct {
		Data struct {
			URL       string `json:"url"`
			AttemptID string `json:"attemptId"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(readAll(start)), &started); err != nil || start.StatusCode != http.StatusOK {
		t.Fatalf("start: %d %v", start.StatusCode, err)
	}
	resp, err := oidctest.Browser(jar, "/console").Get(started.Data.URL)
	if err != nil {
		t.Fatal(err)
	}
	oidctest.Drain(resp)
	if loc := resp.Header.Get("Location"); loc != "/console/" {
		t.Fatalf("the sign-in went to %q", loc)
	}
	u, _ := url.Parse(r.e.url)
	var cookies []string
	for _, c := range jar.Cookies(u) {
		cookies = append(cookies, c.Name+"="+c.Value)
	}
	return req{method: "POST", path: "/api/auth/providers/" + r.provider + "/result", origin: testOrigin,
		body: map[string]any{"attemptId": started.Data.AttemptID}, header: map[string]string{"Cookie": strings.Join(cookies, "; ")}}
}
