package api_test

import (
	"bufio"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/api"
)

// minSharedUpstreamOperations is how many operations of upstream's contract our document serves
// with upstream's method, path and operationId. Raise it when routes are added; a drop means an
// operation was removed or renamed.
const minSharedUpstreamOperations = 81

// upstreamOperation is one row of testdata/upstream-routes.tsv.
type upstreamOperation struct {
	method, path, operationID, success string
	statuses                           []string
}

// readUpstreamOperations reads testdata/upstream-routes.tsv: upstream openclaw-enterprise's
// operations (generated API reference at 03d3d198 plus three later ServicePrincipal operations),
// copied from the project's reference/upstream-routes.tsv because CI cannot see the shared
// reference directory. One operation a line: method|path|operationId|request|success|statuses|summary.
func readUpstreamOperations(t *testing.T) []upstreamOperation {
	t.Helper()
	f, err := os.Open("testdata/upstream-routes.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ops []upstreamOperation
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Split(line, "|")
		if len(fields) != 7 {
			t.Fatalf("malformed row %q", line)
		}
		ops = append(ops, upstreamOperation{method: fields[0], path: fields[1], operationID: fields[2],
			success: fields[4], statuses: strings.Split(fields[5], ",")})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(ops) != 113 {
		t.Fatalf("%d upstream operations, want 113", len(ops))
	}
	return ops
}

// TestOpenAPIMatchesUpstream: every operation we share with upstream (same method and path) has
// upstream's operationId, upstream's success status and at least every status upstream declares,
// so a client generated from upstream's contract works against ours.
func TestOpenAPIMatchesUpstream(t *testing.T) {
	t.Parallel()
	raw, err := json.Marshal(api.OpenAPIDocument())
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]struct {
			OperationID string                     `json:"operationId"`
			Tags        []string                   `json:"tags"`
			Responses   map[string]json.RawMessage `json:"responses"`
			Security    []map[string][]string      `json:"security"`
		} `json:"paths"`
		Components struct {
			SecuritySchemes map[string]json.RawMessage `json:"securitySchemes"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}

	shared, upstream := 0, readUpstreamOperations(t)
	for _, up := range upstream {
		op, ok := doc.Paths[up.path][strings.ToLower(up.method)]
		if !ok {
			continue
		}
		shared++
		where := up.method + " " + up.path
		if op.OperationID != up.operationID {
			t.Errorf("%s: operationId %q, upstream %q", where, op.OperationID, up.operationID)
		}
		var success []string
		for status := range op.Responses {
			if status[0] == '2' || status[0] == '3' {
				success = append(success, status)
			}
		}
		if !slices.Equal(success, []string{up.success}) {
			t.Errorf("%s: success %v, upstream %s", where, success, up.success)
		}
		for _, status := range up.statuses {
			if _, ok := op.Responses[status]; !ok {
				t.Errorf("%s: upstream declares %s, we do not", where, status)
			}
		}
	}
	if shared < minSharedUpstreamOperations {
		t.Errorf("%d operations shared with upstream, want at least %d", shared, minSharedUpstreamOperations)
	}
	t.Logf("%d of upstream's %d operations served with upstream's method, path and operationId", shared, len(upstream))

	// Every operation, ours too, is named and tagged in upstream's style, and uses upstream's
	// security scheme names.
	camel := regexp.MustCompile(`^[a-z][A-Za-z]*$`)
	tag := regexp.MustCompile(`^(IAM|[A-Z][a-z]+( [a-z]+)*)$`)
	for path, item := range doc.Paths {
		for method, op := range item {
			if !camel.MatchString(op.OperationID) {
				t.Errorf("%s %s: operationId %q is not camelCase", method, path, op.OperationID)
			}
			if len(op.Tags) != 1 || !tag.MatchString(op.Tags[0]) {
				t.Errorf("%s %s: tags %v", method, path, op.Tags)
			}
			for _, requirement := range op.Security {
				for scheme := range requirement {
					if _, ok := doc.Components.SecuritySchemes[scheme]; !ok {
						t.Errorf("%s %s: undeclared security scheme %s", method, path, scheme)
					}
				}
			}
		}
	}
	var schemes []string
	for name := range doc.Components.SecuritySchemes {
		schemes = append(schemes, name)
	}
	slices.Sort(schemes)
	if !slices.Equal(schemes, []string{"serviceApiKey", "sessionCookie"}) {
		t.Errorf("security schemes %v, upstream's are serviceApiKey and sessionCookie", schemes)
	}
}
