package api_test

import (
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/openclaw/occ/internal/api"
	"github.com/openclaw/occ/internal/auth"
)

// concurrentCopies is how many identical requests each mutating route receives at once.
const concurrentCopies = 20

// How the identical requests of one route may end, as the same requests sent one after another
// would: the serial outcome the concurrent one must equal.
type concOutcome int

const (
	// oneWinner: a one-shot operation (a create with a unique name, a delete, a version-checked
	// change). Exactly one request applies; the others answer as after it.
	oneWinner concOutcome = iota
	// eachApplies: every request applies (a create without a unique name, a write that is
	// repeated): all succeed, and each is one state change.
	eachApplies
	// oneApplies: an idempotent operation: every request succeeds, alike, and the state changes
	// once (a repeat-safe delete, an enrolment that exists).
	oneApplies
	// limitedApply: a sign-in step whose concurrency is capped: some succeed and each of them is a
	// state change; the rest are refused 429 without one.
	limitedApply
)

// concCase is one mutating route's request and its serial outcome.
type concCase struct {
	request req
	outcome concOutcome
	// losers are the statuses the requests that do not win may answer (oneWinner).
	losers []int
	// events are the audit events per state change, by action (default: one of the route's).
	events map[string]int
	// stored reads the state back and checks it equals the serial outcome of applied changes.
	stored func(t *testing.T, applied int, answers []resp)
}

// concExempt are the mutating routes this test cannot exercise in its Installation, with the
// reason and where they are covered instead.
var concExempt = map[string]string{
	"POST /api/auth/providers/github/result": "needs a sign-in completed through the provider's redirect: TestConcurrentSignInResults",
	"POST /api/auth/providers/google/result": "needs a sign-in completed through the provider's redirect: TestConcurrentSignInResults",
	"POST /api/auth/providers/oidc/result":   "needs a sign-in completed through the provider's redirect: TestConcurrentSignInResults",
}

func mutating(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// fireAll sends n copies of r at once (released together by one barrier) and returns the answers.
func (e *env) fireAll(n int, r req) []resp {
	e.t.Helper()
	requests := make([]req, n)
	for i := range requests {
		requests[i] = r
	}
	return e.fireEach(requests)
}

// fireEach sends every request at once (released together by one barrier) and returns the
// answers in the requests' order.
func (e *env) fireEach(requests []req) []resp {
	e.t.Helper()
	answers := make([]resp, len(requests))
	var start, done sync.WaitGroup
	start.Add(1)
	for i, r := range requests {
		done.Add(1)
		go func() {
			defer done.Done()
			start.Wait()
			answers[i] = doHTTP(e.t, e.http.URL, r)
		}()
	}
	start.Done()
	done.Wait()
	return answers
}

// auditActions counts the audit events by action.
func (e *env) auditActions() map[string]int {
	e.t.Helper()
	rows, err := e.owner.Query(ctxb(), `SELECT action, count(*) FROM occ.audit_events GROUP BY action`)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var action string
		var n int
		if err := rows.Scan(&action, &n); err != nil {
			e.t.Fatal(err)
		}
		out[action] = n
	}
	if err := rows.Err(); err != nil {
		e.t.Fatal(err)
	}
	return out
}

// TestConcurrentMutations: every POST, PUT, PATCH and DELETE route of the route table receives 20
// identical requests at once. None answers 5xx; a one-shot operation has exactly one winner and
// the others answer its documented refusal; an idempotent one answers alike; the stored state
// and the audit events (one per state change, none for a refusal) equal what the same requests
// sent one after another leave. A new mutating route fails the test until it has a case here or
// an exemption with its reason.
func TestConcurrentMutations(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withOfflineSignIn)
	f := newFixtures(t, e)
	matrix := f.cases(e)
	cases := concCases(e, f)
	for _, route := range api.Routes() {
		key := route.Method + " " + route.Path
		if !mutating(route.Method) {
			continue
		}
		if _, ok := concExempt[key]; ok {
			continue
		}
		build, ok := cases[key]
		if !ok {
			// The matrix's request, sent by the bootstrap administrator, with the outcome of
			// the route's kind.
			m, inMatrix := matrix[key]
			if !inMatrix {
				t.Errorf("%s: a mutating route without a concurrency case or an exemption", key)
				continue
			}
			build = func() concCase { return fromMatrix(e, route, m()) }
		}
		t.Run(key, func(t *testing.T) {
			// The cases run one after another, so the env's helpers may fail this subtest.
			parent := e.t
			e.t = t
			defer func() { e.t = parent }()
			// Each case starts with fresh per-minute sign-in budgets: the losers of an earlier
			// race (wrong CLI codes, starts) spent the test address's.
			e.exec(`DELETE FROM occ.rate_limits`)
			runConcCase(t, e, route, build())
		})
	}
	for key := range concExempt {
		if !slices.ContainsFunc(api.Routes(), func(r *api.Route) bool { return r.Method+" "+r.Path == key }) {
			t.Errorf("exemption of %s, which is not in the route table", key)
		}
	}
}

func runConcCase(t *testing.T, e *env, route *api.Route, c concCase) {
	before := e.auditActions()
	answers := e.fireAll(concurrentCopies, c.request)
	statuses := map[int]int{}
	applied := 0
	for _, a := range answers {
		statuses[a.status]++
		if a.status >= 500 {
			t.Errorf("%d %s", a.status, a.raw)
		}
		if a.status == route.Success {
			applied++
		} else if a.status < 300 {
			t.Errorf("%d, not the documented %d: %s", a.status, route.Success, a.raw)
		}
	}
	refused := func(allowed []int) {
		for _, a := range answers {
			if a.status != route.Success && !slices.Contains(allowed, a.status) {
				t.Errorf("refused %d, not one of %v: %s", a.status, allowed, a.raw)
			}
		}
	}
	switch c.outcome {
	case oneWinner:
		if applied != 1 {
			t.Errorf("statuses %v: %d winners, want 1", statuses, applied)
		}
		refused(c.losers)
	case eachApplies, oneApplies:
		if applied != concurrentCopies {
			t.Errorf("statuses %v: want %d × %d", statuses, concurrentCopies, route.Success)
		}
		if c.outcome == oneApplies {
			for _, a := range answers[1:] {
				if string(a.raw) != string(answers[0].raw) && !sameData(a, answers[0]) {
					t.Errorf("an idempotent request answered %s, another %s", a.raw, answers[0].raw)
				}
			}
			applied = 1
		}
	case limitedApply:
		if applied == 0 {
			t.Errorf("statuses %v: none applied", statuses)
		}
		refused([]int{http.StatusTooManyRequests})
	}
	if t.Failed() {
		return
	}
	after := e.auditActions()
	events := c.events
	if events == nil {
		events = map[string]int{route.Action: 1}
	}
	for action := range union(before, after, events) {
		if got, want := after[action]-before[action], events[action]*applied; got != want {
			t.Errorf("%d audit events %s after %d state changes, want %d", got, action, applied, want)
		}
	}
	if c.stored != nil {
		c.stored(t, applied, answers)
	}
}

// sameData reports whether two answers carry the same data (their request ids differ).
func sameData(a, b resp) bool {
	return mustJSON(a.doc["data"]) == mustJSON(b.doc["data"])
}

func union(maps ...map[string]int) map[string]bool {
	out := map[string]bool{}
	for _, m := range maps {
		for k := range m {
			out[k] = true
		}
	}
	return out
}

// fromMatrix turns an authorization-matrix case into a concurrency case sent by the bootstrap
// administrator (its key, or its browser session for a human-only route).
func fromMatrix(e *env, route *api.Route, m matrixCase) concCase {
	r := req{method: m.method, path: m.path, body: m.body, key: e.adminKey}
	if m.human {
		r = req{method: m.method, path: m.path, body: m.body, cookie: e.adminCookie(), origin: testOrigin}
	}
	c := concCase{request: r}
	switch route.Method {
	case http.MethodDelete:
		c.outcome, c.losers = oneWinner, []int{http.StatusNotFound}
	case http.MethodPatch:
		c.outcome, c.stored = eachApplies, patched(e, r)
	default:
		c.outcome, c.losers = oneWinner, []int{http.StatusConflict}
		if body, ok := m.body.(map[string]any); ok && body["expectedVersion"] != nil && strings.HasPrefix(m.path, "/api/auth/accounts/") {
			c.stored = versionAdvancedOnce(e, r, body["expectedVersion"])
		}
	}
	return c
}

// patched checks that the resource reads back as the PATCH wrote it (a sub-resource such as
// /credential is read as the member of its parent).
func patched(e *env, r req) func(t *testing.T, _ int, _ []resp) {
	return func(t *testing.T, _ int, _ []resp) {
		path, member := r.path, ""
		if i := strings.LastIndex(path, "/"); strings.HasSuffix(path, "/credential") {
			path, member = path[:i], "credential"
		}
		got := doHTTP(t, e.http.URL, req{method: "GET", path: path, key: e.adminKey}).data()
		for k, v := range r.body.(map[string]any) {
			stored, ok := got[k]
			if member != "" {
				stored, ok = got[member].(map[string]any)[k]
			}
			if ok && mustJSON(stored) != mustJSON(v) {
				t.Errorf("%s reads back %s = %s, written %s", path, k, mustJSON(stored), mustJSON(v))
			}
		}
	}
}

// versionAdvancedOnce checks that a version-checked account change applied once: the account's
// version is one past the expected one.
func versionAdvancedOnce(e *env, r req, expected any) func(t *testing.T, _ int, _ []resp) {
	return func(t *testing.T, _ int, _ []resp) {
		account := strings.Join(strings.SplitN(r.path, "/", 6)[:5], "/")
		got := doHTTP(t, e.http.URL, req{method: "GET", path: account, cookie: r.cookie, origin: testOrigin})
		if got.data()["version"] != float64(expected.(int)+1) {
			t.Errorf("%s after the race: %s, want version %v + 1", account, got.raw, expected)
		}
	}
}

// concCases are the routes whose request or outcome the matrix case does not say.
func concCases(e *env, f fixtures) map[string]func() concCase {
	nsPath := "/namespaces/" + f.nsA
	get := func(t *testing.T, path string) resp {
		t.Helper()
		return doHTTP(t, e.http.URL, req{method: "GET", path: path, key: e.adminKey})
	}
	gone := func(path string) func(t *testing.T, _ int, _ []resp) {
		return func(t *testing.T, _ int, _ []resp) {
			if r := get(t, path); r.status != http.StatusNotFound {
				t.Errorf("GET %s after the deletion: %d %s", path, r.status, r.raw)
			}
		}
	}
	listed := func(path string, before int) func(t *testing.T, applied int, _ []resp) {
		return func(t *testing.T, applied int, _ []resp) {
			if n := len(get(t, path).list()); n != before+applied {
				t.Errorf("GET %s lists %d, want %d before and %d created", path, n, before, applied)
			}
		}
	}
	count := func(path string) int {
		return len(doHTTP(e.t, e.http.URL, req{method: "GET", path: path, key: e.adminKey}).list())
	}
	matrix := f.cases(e)
	fromM := func(key string, outcome concOutcome, losers ...int) concCase {
		m := matrix[key]()
		c := fromMatrix(e, routeOf(key), m)
		c.outcome, c.losers = outcome, losers
		return c
	}
	cases := map[string]func() concCase{
		// Authentication.
		"POST /api/auth/sign-in/email": func() concCase {
			who := e.newHuman("signin-" + randomSuffix() + "@example.com")
			email := who.accountEmail(e)
			sessions := e.count(`SELECT count(*) FROM occ.sessions WHERE account_id = $1`, who.account)
			return concCase{request: signInReq(email, "a-long-test-password"), outcome: limitedApply,
				stored: func(t *testing.T, applied int, _ []resp) {
					if n := e.count(`SELECT count(*) FROM occ.sessions WHERE account_id = $1`, who.account); n != sessions+applied {
						t.Errorf("%d sessions, want %d", n, sessions+applied)
					}
				}}
		},
		"POST /api/auth/sign-out": func() concCase {
			who := e.newHuman("signout-" + randomSuffix() + "@example.com")
			return concCase{request: who.apply(req{method: "POST", path: "/api/auth/sign-out"}), outcome: oneWinner,
				losers: []int{http.StatusUnauthorized},
				stored: func(t *testing.T, _ int, _ []resp) {
					if r := e.do(req{method: "GET", path: "/api/auth/session", cookie: who.cookie}); r.doc["data"] != nil {
						t.Errorf("the session survived: %s", r.raw)
					}
				}}
		},
		"POST /api/auth/accounts": func() concCase {
			c := fromM("POST /api/auth/accounts", oneWinner, http.StatusConflict)
			email := c.request.body.(map[string]any)["email"]
			c.stored = func(t *testing.T, _ int, _ []resp) {
				if n := e.count(`SELECT count(*) FROM occ.accounts WHERE email = $1`, email); n != 1 {
					t.Errorf("%d accounts of %s", n, email)
				}
			}
			return c
		},
		"POST /api/auth/service-keys": func() concCase {
			// Key names are labels, not unique: each request issues a key.
			c := fromM("POST /api/auth/service-keys", eachApplies)
			before := e.count(`SELECT count(*) FROM occ.service_keys WHERE service_principal_id = $1`, f.spBare)
			c.stored = func(t *testing.T, applied int, _ []resp) {
				if n := e.count(`SELECT count(*) FROM occ.service_keys WHERE service_principal_id = $1`, f.spBare); n != before+applied {
					t.Errorf("%d keys, want %d", n, before+applied)
				}
			}
			return c
		},
		"DELETE /api/auth/service-keys/{keyId}": func() concCase {
			c := fromM("DELETE /api/auth/service-keys/{keyId}", oneWinner, http.StatusNotFound)
			path := c.request.path
			c.stored = func(t *testing.T, _ int, _ []resp) {
				if n := e.count(`SELECT count(*) FROM occ.service_keys WHERE id = $1`, strings.TrimPrefix(path, "/api/auth/service-keys/")); n != 0 {
					t.Errorf("the revoked key is stored")
				}
			}
			return c
		},

		// Namespaces and their IAM policy.
		"POST /namespaces": func() concCase {
			c := fromM("POST /namespaces", oneWinner, http.StatusConflict)
			c.stored = func(t *testing.T, _ int, answers []resp) {
				for _, a := range answers {
					if a.status == http.StatusCreated {
						if r := get(t, "/namespaces/"+a.data()["id"].(string)); r.status != http.StatusOK {
							t.Errorf("the created Namespace: %d", r.status)
						}
					}
				}
				if n := e.count(`SELECT count(*) FROM occ.namespaces WHERE name = $1`, c.request.body.(map[string]any)["name"]); n != 1 {
					t.Errorf("%d Namespaces of the name", n)
				}
			}
			return c
		},
		"DELETE /namespaces/{namespaceId}": func() concCase {
			c := fromM("DELETE /namespaces/{namespaceId}", oneApplies)
			path := c.request.path
			c.stored = func(t *testing.T, _ int, _ []resp) {
				if r := get(t, path); r.status != http.StatusOK || r.data()["status"] != "deleting" {
					t.Errorf("GET after the deletion: %d %s", r.status, r.raw)
				}
			}
			return c
		},
		"POST /namespaces/{namespaceId}/iam/roles": func() concCase {
			c := fromM("POST /namespaces/{namespaceId}/iam/roles", eachApplies)
			c.stored = listed(nsPath+"/iam/roles", count(nsPath+"/iam/roles"))
			return c
		},
		"DELETE /namespaces/{namespaceId}/iam/roles/{roleId}": func() concCase {
			c := fromM("DELETE /namespaces/{namespaceId}/iam/roles/{roleId}", oneWinner, http.StatusNotFound)
			c.stored = gone(c.request.path)
			return c
		},
		"POST /namespaces/{namespaceId}/iam/access-bindings": func() concCase {
			c := fromM("POST /namespaces/{namespaceId}/iam/access-bindings", oneWinner, http.StatusConflict)
			c.stored = listed(nsPath+"/iam/access-bindings", count(nsPath+"/iam/access-bindings"))
			return c
		},
		"DELETE /namespaces/{namespaceId}/iam/access-bindings/{bindingId}": func() concCase {
			c := fromM("DELETE /namespaces/{namespaceId}/iam/access-bindings/{bindingId}", oneWinner, http.StatusNotFound)
			c.stored = gone(c.request.path)
			return c
		},
		"POST /namespaces/{namespaceId}/iam/service-principals": func() concCase {
			c := fromM("POST /namespaces/{namespaceId}/iam/service-principals", eachApplies)
			c.stored = listed(nsPath+"/iam/service-principals", count(nsPath+"/iam/service-principals"))
			return c
		},

		// Namespace-owned resources.
		"POST /namespaces/{namespaceId}/configurations": func() concCase {
			c := fromM("POST /namespaces/{namespaceId}/configurations", eachApplies)
			before := e.count(`SELECT count(*) FROM occ.configurations WHERE namespace_id = $1`, f.nsA)
			c.stored = func(t *testing.T, applied int, _ []resp) {
				if n := e.count(`SELECT count(*) FROM occ.configurations WHERE namespace_id = $1`, f.nsA); n != before+applied {
					t.Errorf("%d Configurations, want %d", n, before+applied)
				}
			}
			return c
		},
		"PATCH /namespaces/{namespaceId}/configurations/{configurationId}": func() concCase {
			// Every write advances the generation once: 20 writes, 20 generations.
			c := fromM("PATCH /namespaces/{namespaceId}/configurations/{configurationId}", eachApplies)
			before := get(e.t, c.request.path).data()["generation"].(float64)
			c.stored = func(t *testing.T, applied int, answers []resp) {
				if g := get(t, c.request.path).data()["generation"].(float64); g != before+float64(applied) {
					t.Errorf("generation %v after %d writes from %v", g, applied, before)
				}
				seen := map[float64]bool{}
				for _, a := range answers {
					seen[a.data()["generation"].(float64)] = true
				}
				if len(seen) != applied {
					t.Errorf("%d distinct generations answered for %d writes", len(seen), applied)
				}
			}
			return c
		},
		"DELETE /namespaces/{namespaceId}/configurations/{configurationId}": func() concCase {
			c := fromM("DELETE /namespaces/{namespaceId}/configurations/{configurationId}", oneWinner, http.StatusNotFound)
			c.stored = gone(c.request.path)
			return c
		},
		"POST /namespaces/{namespaceId}/secrets": func() concCase {
			// Secret names are not unique in a Namespace (ids are): each request creates one.
			c := fromM("POST /namespaces/{namespaceId}/secrets", eachApplies)
			c.stored = listed(nsPath+"/secrets", count(nsPath+"/secrets"))
			return c
		},
		"DELETE /namespaces/{namespaceId}/secrets/{secretId}": func() concCase {
			c := fromM("DELETE /namespaces/{namespaceId}/secrets/{secretId}", oneWinner, http.StatusNotFound)
			c.stored = gone(c.request.path)
			return c
		},
		"POST /namespaces/{namespaceId}/service-accounts": func() concCase {
			c := fromM("POST /namespaces/{namespaceId}/service-accounts", oneWinner, http.StatusConflict)
			c.stored = listed(nsPath+"/service-accounts", count(nsPath+"/service-accounts"))
			return c
		},
		"DELETE /namespaces/{namespaceId}/service-accounts/{serviceAccountId}": func() concCase {
			c := fromM("DELETE /namespaces/{namespaceId}/service-accounts/{serviceAccountId}", oneWinner, http.StatusNotFound)
			c.stored = gone(c.request.path)
			return c
		},
		"POST /namespaces/{namespaceId}/agents": func() concCase {
			c := fromM("POST /namespaces/{namespaceId}/agents", oneWinner, http.StatusConflict)
			c.stored = listed(nsPath+"/agents", count(nsPath+"/agents"))
			return c
		},
		"DELETE /namespaces/{namespaceId}/agents/{agentId}": func() concCase {
			// Repeat-safe while deleting: every request 202, one deletion.
			c := fromM("DELETE /namespaces/{namespaceId}/agents/{agentId}", oneApplies)
			path := c.request.path
			c.stored = func(t *testing.T, _ int, _ []resp) {
				if r := get(t, path); r.data()["status"] != "deleting" {
					t.Errorf("GET after the deletion: %d %s", r.status, r.raw)
				}
			}
			return c
		},
		"POST /namespaces/{namespaceId}/agents/provision": func() concCase {
			// One requestId: one provisioning, every copy answers it.
			c := fromM("POST /namespaces/{namespaceId}/agents/provision", oneApplies)
			requestID := c.request.body.(map[string]any)["requestId"]
			c.stored = func(t *testing.T, _ int, answers []resp) {
				if n := e.count(`SELECT count(*) FROM occ.agent_provisioning_work WHERE request_id = $1`, requestID); n != 1 {
					t.Errorf("%d provisioning records for one requestId", n)
				}
				work := answers[0].data()["provisioning"].(map[string]any)["workId"].(string)
				if n := e.count(`SELECT count(*) FROM occ.controller_work WHERE idempotency_key LIKE $1`, "agent_provisioning:"+work+":%"); n != 1 {
					t.Errorf("%d work items for one provisioning", n)
				}
			}
			return c
		},
		"POST /namespaces/{namespaceId}/agents/provision/{workId}/retry": func() concCase {
			// One new run; the others find it no longer failed.
			c := fromM("POST /namespaces/{namespaceId}/agents/provision/{workId}/retry", oneWinner, http.StatusConflict)
			c.stored = func(t *testing.T, _ int, _ []resp) {
				if r := get(t, c.request.path[:len(c.request.path)-len("/retry")]); r.data()["provisioning"].(map[string]any)["run"] != float64(2) {
					t.Errorf("GET after the retries: %s", r.raw)
				}
			}
			return c
		},
		"POST /namespaces/{namespaceId}/agents/{agentId}/deploy": func() concCase {
			// Each deploy is a revision, numbered once.
			c := fromM("POST /namespaces/{namespaceId}/agents/{agentId}/deploy", eachApplies)
			revisions := count(nsPath + "/agents/" + f.resources.agent + "/revisions")
			c.stored = func(t *testing.T, applied int, answers []resp) {
				listed(nsPath+"/agents/"+f.resources.agent+"/revisions", revisions)(t, applied, answers)
				seen := map[float64]bool{}
				for _, a := range answers {
					seen[a.data()["revision"].(float64)] = true
				}
				if len(seen) != applied {
					t.Errorf("%d distinct revision numbers for %d deploys", len(seen), applied)
				}
			}
			return c
		},
		"POST /namespaces/{namespaceId}/agents/{agentId}/stop": func() concCase {
			// Each stop is its own stop operation.
			c := fromM("POST /namespaces/{namespaceId}/agents/{agentId}/stop", eachApplies)
			c.stored = func(t *testing.T, _ int, _ []resp) {
				if r := get(t, nsPath+"/agents/"+f.resources.agent); r.data()["desiredRuntimeState"] != "stopped" {
					t.Errorf("after the stops: %s", r.raw)
				}
			}
			return c
		},

		"POST /namespaces/{namespaceId}/agents/{agentId}/deployments/{deploymentId}/diagnostics": func() concCase {
			// A read of the runtime, changing nothing and audited never; the caller's runtime read
			// budget (a burst of 10) refuses the rest 429.
			c := fromM("POST /namespaces/{namespaceId}/agents/{agentId}/deployments/{deploymentId}/diagnostics", limitedApply)
			c.events = map[string]int{}
			return c
		},

		// Account controls: each carries the version just read, so one applies and the others
		// find it changed (409).
		"POST /api/auth/recovery": func() concCase {
			c := fromM("POST /api/auth/recovery", oneWinner, http.StatusConflict)
			next := c.request.body.(map[string]any)["userId"]
			c.stored = func(t *testing.T, _ int, _ []resp) {
				got := doHTTP(t, e.http.URL, req{method: "GET", path: "/api/auth/recovery", cookie: c.request.cookie, origin: testOrigin})
				if got.data()["userId"] != next {
					t.Errorf("the recovery account after the race: %s, want %v", got.raw, next)
				}
			}
			return c
		},
		"POST /api/auth/accounts/{userId}/enrol": func() concCase {
			// OCC enrols every account when it is created: nothing changes, nothing is audited.
			c := fromM("POST /api/auth/accounts/{userId}/enrol", oneApplies)
			c.events = map[string]int{}
			return c
		},
	}

	// CLI sessions. Each case approves as a person of its own: wrong codes are budgeted per
	// account and address, and the losers of a race spend that budget.
	sessionKey := func(cookie string) string {
		return e.expect(e.do(req{method: "GET", path: "/api/auth/session", cookie: cookie}), 200).data()["sessionKey"].(string)
	}
	approver := func(who identity, path string, body any) req {
		return req{method: "POST", path: path, body: body, cookie: who.cookie, origin: testOrigin,
			header: map[string]string{auth.SessionKeyHeader: sessionKey(who.cookie)}}
	}
	person := func() identity { return e.newHuman("cli-" + randomSuffix() + "@example.com") }
	startCLI := func() map[string]any {
		return e.expect(e.do(req{method: "POST", path: "/api/auth/cli/device-authorizations", body: map[string]any{"clientLabel": "race"}}), 201).data()
	}
	cases["POST /api/auth/cli/device-authorizations"] = func() concCase {
		before := e.count(`SELECT count(*) FROM occ.cli_device_authorizations`)
		return concCase{request: req{method: "POST", path: "/api/auth/cli/device-authorizations", body: map[string]any{"clientLabel": "race"}},
			outcome: limitedApply, events: map[string]int{},
			stored: func(t *testing.T, applied int, _ []resp) {
				if n := e.count(`SELECT count(*) FROM occ.cli_device_authorizations`); n != before+applied {
					t.Errorf("%d device authorizations, want %d", n, before+applied)
				}
			}}
	}
	cases["POST /api/auth/cli/device-authorizations/lookup"] = func() concCase {
		started := startCLI()
		return concCase{request: approver(person(), "/api/auth/cli/device-authorizations/lookup", map[string]any{"userCode": started["userCode"]}),
			outcome: oneApplies, events: map[string]int{}}
	}
	cases["POST /api/auth/cli/device-authorizations/decide"] = func() concCase {
		started := startCLI()
		// A loser's code is no longer pending: a wrong code (404), and after five a minute 429.
		return concCase{request: approver(person(), "/api/auth/cli/device-authorizations/decide", map[string]any{"userCode": started["userCode"], "decision": "approve"}),
			outcome: oneWinner, losers: []int{http.StatusNotFound, http.StatusTooManyRequests}, events: map[string]int{api.ActionCLISessionsApprove: 1}}
	}
	approved := func(who identity) map[string]any {
		started := startCLI()
		e.expect(e.do(approver(who, "/api/auth/cli/device-authorizations/decide", map[string]any{"userCode": started["userCode"], "decision": "approve"})), 200)
		return started
	}
	cases["POST /api/auth/cli/token"] = func() concCase {
		started := approved(person())
		return concCase{request: req{method: "POST", path: "/api/auth/cli/token", body: map[string]any{"deviceCode": started["deviceCode"]}},
			outcome: oneWinner, losers: []int{http.StatusBadRequest}, events: map[string]int{api.ActionCLISessionsIssue: 1},
			stored: func(t *testing.T, _ int, answers []resp) {
				for _, a := range answers {
					if a.status != http.StatusOK && a.errCode() != "EXPIRED_TOKEN" && a.errCode() != "SLOW_DOWN" {
						t.Errorf("a losing exchange: %s", a.raw)
					}
				}
			}}
	}
	issued := func(who identity) (string, string) {
		started := approved(who)
		out := e.expect(e.do(req{method: "POST", path: "/api/auth/cli/token", body: map[string]any{"deviceCode": started["deviceCode"]}}), 200).data()
		return out["token"].(string), out["session"].(map[string]any)["id"].(string)
	}
	cliGone := func(token string) func(t *testing.T, _ int, _ []resp) {
		return func(t *testing.T, _ int, _ []resp) {
			if r := e.do(cliReq(token, "GET", "/installation")); r.status != http.StatusUnauthorized {
				t.Errorf("the revoked CLI session still admits: %d", r.status)
			}
		}
	}
	cases["DELETE /api/auth/cli-sessions/{cliSessionId}"] = func() concCase {
		who := person()
		token, id := issued(who)
		return concCase{request: req{method: "DELETE", path: "/api/auth/cli-sessions/" + id, cookie: who.cookie, origin: testOrigin},
			outcome: oneWinner, losers: []int{http.StatusNotFound}, stored: cliGone(token)}
	}
	cases["DELETE /api/auth/cli-sessions/current"] = func() concCase {
		token, _ := issued(person())
		return concCase{request: cliReq(token, "DELETE", "/api/auth/cli-sessions/current"),
			outcome: oneWinner, losers: []int{http.StatusUnauthorized}, stored: cliGone(token)}
	}

	// Provider sign-in starts: each admitted start is one pending attempt, not audited.
	for _, p := range []string{"github", "google", "oidc"} {
		cases["POST /api/auth/providers/"+p+"/start"] = func() concCase {
			before := e.count(`SELECT count(*) FROM occ.sign_in_attempts`)
			return concCase{request: req{method: "POST", path: "/api/auth/providers/" + p + "/start", origin: testOrigin},
				outcome: limitedApply, events: map[string]int{},
				stored: func(t *testing.T, applied int, _ []resp) {
					if n := e.count(`SELECT count(*) FROM occ.sign_in_attempts`); n != before+applied {
						t.Errorf("%d attempts, want %d", n, before+applied)
					}
				}}
		}
	}
	return cases
}

func routeOf(key string) *api.Route {
	for _, r := range api.Routes() {
		if r.Method+" "+r.Path == key {
			return r
		}
	}
	panic("no route " + key)
}
