package api

import (
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// router matches request paths against the route table's templates. Literal segments win over
// parameters; a template matches only a path with exactly its number of segments; percent-encoded
// slashes stay inside their segment.
type router struct {
	routes []*compiledRoute
}

type compiledRoute struct {
	route    *Route
	segments []segment
}

type segment struct {
	literal string
	param   string // set for {name}
}

var paramSegment = regexp.MustCompile(`^\{([A-Za-z][A-Za-z0-9]*)\}$`)

func newRouter(routes []*Route) *router {
	r := &router{}
	for _, rt := range routes {
		cr := &compiledRoute{route: rt}
		for _, part := range strings.Split(strings.TrimPrefix(rt.Path, "/"), "/") {
			if m := paramSegment.FindStringSubmatch(part); m != nil {
				cr.segments = append(cr.segments, segment{param: m[1]})
			} else {
				cr.segments = append(cr.segments, segment{literal: part})
			}
		}
		r.routes = append(r.routes, cr)
	}
	return r
}

// match returns the route for method and the escaped path with its parameters. When the path
// matches templates but none for this method, route is nil and allowed lists the methods that
// exist (405); when nothing matches, both are nil (404). HEAD is served by GET routes.
func (r *router) match(method, escapedPath string) (route *Route, params map[string]string, template string, allowed []string) {
	if !strings.HasPrefix(escapedPath, "/") {
		return nil, nil, "", nil
	}
	raw := strings.Split(strings.TrimPrefix(escapedPath, "/"), "/")
	parts := make([]string, len(raw))
	for i, p := range raw {
		u, err := url.PathUnescape(p)
		if err != nil {
			return nil, nil, "", nil
		}
		parts[i] = u
	}
	lookup := method
	if method == http.MethodHead {
		lookup = http.MethodGet
	}
	bestScore := -1
	var best *compiledRoute
	var bestParams map[string]string
	for _, cr := range r.routes {
		if len(cr.segments) != len(parts) {
			continue
		}
		p, score, ok := cr.bind(parts)
		if !ok {
			continue
		}
		if cr.route.Method == lookup {
			if score > bestScore {
				best, bestParams, bestScore = cr, p, score
			}
			continue
		}
		if !slices.Contains(allowed, cr.route.Method) {
			allowed = append(allowed, cr.route.Method)
			template = cr.route.Path
		}
	}
	if best != nil {
		return best.route, bestParams, best.route.Path, nil
	}
	slices.Sort(allowed)
	return nil, nil, template, allowed
}

// bind matches parts against the template; score counts literal segments (more specific wins).
func (cr *compiledRoute) bind(parts []string) (map[string]string, int, bool) {
	params := map[string]string{}
	score := 0
	for i, seg := range cr.segments {
		if seg.param == "" {
			if parts[i] != seg.literal {
				return nil, 0, false
			}
			score++
			continue
		}
		if parts[i] == "" {
			return nil, 0, false
		}
		params[seg.param] = parts[i]
	}
	return params, score, true
}
