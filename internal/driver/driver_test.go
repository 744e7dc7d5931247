package driver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/problem"
	"github.com/openclaw/occ/internal/schema"
)

const secretish = "sk-proj-abcdefghijklmnopqrstuvwxyz"

func testSchema() driver.ObjectSchema {
	return driver.NewObjectSchema(schema.Object(
		schema.Required("name", &schema.Schema{Type: schema.TypeString, MaxBytes: 8, Pattern: `^[a-z]+$`}),
		schema.Optional("count", schema.SafeInteger(1, 10)),
		schema.Optional("mode", schema.Enum("a", "b")),
		schema.Optional("on", schema.Boolean()),
		schema.Optional("nested", schema.Object(schema.Required("inner", schema.SafeInteger(0, 1)))),
		schema.Optional("checked", &schema.Schema{Type: schema.TypeString, Rule: func(v any) (string, string) {
			if v.(string) != "ok" {
				return problem.DetailInvalidValue, "Must be ok."
			}
			return "", ""
		}}),
	))
}

func TestObjectSchemaValidate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		cfg  map[string]any
		want []problem.Detail // Path and Code only
	}{
		{"valid minimal", map[string]any{"name": "abc"}, nil},
		{"valid full", map[string]any{"name": "abc", "count": 3, "mode": "b", "on": true, "nested": map[string]any{"inner": 1}, "checked": "ok"}, nil},
		{"integer as float64", map[string]any{"name": "abc", "count": float64(4)}, nil},
		{"integer as json.Number", map[string]any{"name": "abc", "count": json.Number("4")}, nil},
		{"integer as uint64", map[string]any{"name": "abc", "count": uint64(4)}, nil},
		{"nil configuration", nil, []problem.Detail{{Path: "/name", Code: problem.DetailRequired}}},
		{"unknown field", map[string]any{"name": "abc", "zz": secretish, "a/b~c": 1},
			[]problem.Detail{{Path: "/a~1b~0c", Code: problem.DetailUnknownField}, {Path: "/zz", Code: problem.DetailUnknownField}}},
		{"wrong types", map[string]any{"name": 5, "count": "3", "on": "true", "nested": []any{}, "mode": 1},
			[]problem.Detail{
				{Path: "/name", Code: problem.DetailInvalidType},
				{Path: "/count", Code: problem.DetailInvalidType},
				{Path: "/mode", Code: problem.DetailInvalidType},
				{Path: "/on", Code: problem.DetailInvalidType},
				{Path: "/nested", Code: problem.DetailInvalidType},
			}},
		{"fractional integer", map[string]any{"name": "abc", "count": 2.5}, []problem.Detail{{Path: "/count", Code: problem.DetailInvalidType}}},
		{"unsafe integer", map[string]any{"name": "abc", "count": float64(1 << 60)}, []problem.Detail{{Path: "/count", Code: problem.DetailInvalidType}}},
		{"out of range", map[string]any{"name": "abc", "count": 11}, []problem.Detail{{Path: "/count", Code: problem.DetailInvalidValue}}},
		{"too long", map[string]any{"name": "abcdefghi"}, []problem.Detail{{Path: "/name", Code: problem.DetailTooLong}}},
		{"pattern", map[string]any{"name": "ABC"}, []problem.Detail{{Path: "/name", Code: problem.DetailInvalidFormat}}},
		{"enum", map[string]any{"name": "abc", "mode": "c"}, []problem.Detail{{Path: "/mode", Code: problem.DetailInvalidValue}}},
		{"nested", map[string]any{"name": "abc", "nested": map[string]any{"x": 1}},
			[]problem.Detail{{Path: "/nested/x", Code: problem.DetailUnknownField}, {Path: "/nested/inner", Code: problem.DetailRequired}}},
		{"check", map[string]any{"name": "abc", "checked": secretish}, []problem.Detail{{Path: "/checked", Code: problem.DetailInvalidValue}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			checkDetails(t, testSchema(), tc.cfg, tc.want)
		})
	}
}

// checkDetails validates cfg against schema and compares the details' paths and codes with want
// (nil: valid); messages must be present and never repeat the submitted value.
func checkDetails(t *testing.T, schema driver.ObjectSchema, cfg map[string]any, want []problem.Detail) {
	t.Helper()
	err := schema.Validate(cfg)
	if want == nil {
		if err != nil {
			t.Fatalf("Validate: %v", err)
		}
		return
	}
	var ce *driver.ConfigurationError
	if !errors.As(err, &ce) {
		t.Fatalf("Validate: %v, want *ConfigurationError", err)
	}
	var got []problem.Detail
	for _, d := range ce.Details {
		if d.Message == "" || strings.Contains(d.Message, secretish) {
			t.Errorf("detail %s has an unsafe message %q", d.Path, d.Message)
		}
		got = append(got, problem.Detail{Path: d.Path, Code: d.Code})
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("details = %v, want %v", got, want)
	}
	if strings.Contains(err.Error(), secretish) || driver.Code(err) != driver.CodeDriverConfigurationInvalid {
		t.Fatalf("error %q (code %q) leaks a value or has the wrong code", err, driver.Code(err))
	}
}

func TestJSONSchemaIsClosedEverywhere(t *testing.T) {
	t.Parallel()
	doc := testSchema().JSONSchema()
	if doc["additionalProperties"] != false || doc["type"] != "object" {
		t.Fatalf("root not closed: %v", doc)
	}
	nested := doc["properties"].(map[string]any)["nested"].(map[string]any)
	if nested["additionalProperties"] != false {
		t.Fatalf("nested object not closed: %v", nested)
	}
	if req := doc["required"]; !reflect.DeepEqual(req, []string{"name"}) {
		t.Fatalf("required = %v", req)
	}
	if _, err := json.Marshal(doc); err != nil {
		t.Fatalf("schema does not marshal: %v", err)
	}
}

func TestErrorClassAndCode(t *testing.T) {
	t.Parallel()
	cases := []struct {
		err       error
		class     string
		code      string
		permanent bool
	}{
		{&driver.TransientDependencyError{Dependency: driver.DependencyKubernetesAPI, Code: driver.CodeKubernetesAPIUnavailable, Reason: driver.TransientTimeout}, "TransientDependencyError", driver.CodeKubernetesAPIUnavailable, false},
		{&driver.PermanentError{Code: "X_PERMANENT"}, "PermanentError", "X_PERMANENT", true},
		{&driver.RetryableError{Code: "X_RETRY"}, "RetryableError", "X_RETRY", false},
		{&driver.ActivationPendingError{Code: "WORKSPACE_NODE_PENDING"}, "ActivationPendingError", "WORKSPACE_NODE_PENDING", false},
		{&driver.ActivationFailedError{Code: "AGENT_GATEWAY_UNAUTHORIZED"}, "ActivationFailedError", "AGENT_GATEWAY_UNAUTHORIZED", true},
		{&driver.UnsupportedError{Code: driver.CodeHarnessAuthenticationUnsupported}, "UnsupportedError", driver.CodeHarnessAuthenticationUnsupported, true},
		{&driver.PreflightError{Code: driver.CodeKubernetesAPIUnavailable, Host: "10.0.0.1", Port: 6443}, "PreflightError", driver.CodeKubernetesAPIUnavailable, false},
		{driver.NewConfigurationError(), "ConfigurationError", driver.CodeDriverConfigurationInvalid, true},
		{&driver.ImplementationUnavailableError{Implementation: "x", Code: driver.CodeDriverUnavailableInProduction}, "ImplementationUnavailableError", driver.CodeDriverUnavailableInProduction, true},
		{&driver.InvalidObservationError{Reason: "r"}, "InvalidObservationError", driver.CodeInvalidDriverObservation, true},
		{context.Canceled, "Canceled", "", false},
		{context.DeadlineExceeded, "DeadlineExceeded", "", false},
		{errors.New("boom"), "Error", "", false},
		{nil, "", "", false},
	}
	for _, tc := range cases {
		for _, err := range []error{tc.err, wrap(tc.err)} {
			if got := driver.ErrorClass(err); got != tc.class {
				t.Errorf("ErrorClass(%v) = %q, want %q", err, got, tc.class)
			}
			if got := driver.Code(err); got != tc.code {
				t.Errorf("Code(%v) = %q, want %q", err, got, tc.code)
			}
			if got := driver.IsPermanent(err); got != tc.permanent {
				t.Errorf("IsPermanent(%v) = %v, want %v", err, got, tc.permanent)
			}
		}
	}
}

func wrap(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("context: %w", err)
}

func TestSanitizeReason(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"":                                 "",
		"The network is ready.":            "The network is ready.",
		"(status) 503, \"quoted\"\n":       "status_ 503_ _quoted__",
		"  leading space":                  "leading space",
		"unicode é":                        "unicode _",
		strings.Repeat("a", 300):           strings.Repeat("a", 253) + "...",
		"trailing spaces   ":               "trailing spaces",
		"Dependency docker: unreachable/x": "Dependency docker: unreachable/x",
	}
	for in, want := range cases {
		if got := driver.SanitizeReason(in); got != want {
			t.Errorf("SanitizeReason(%q) = %q, want %q", in, got, want)
		}
		if got := driver.SanitizeReason(in); len(got) > driver.MaxReasonLength || driver.SanitizeReason(got) != got {
			t.Errorf("SanitizeReason(%q) = %q is not a fixed point within bounds", in, got)
		}
	}
}

func TestNamespaceObservations(t *testing.T) {
	t.Parallel()
	const id = "ns_1"
	permanent := driver.NamespaceEnsureFailed(id, wrap(&driver.PermanentError{Code: "C", Reason: "The thing conflicts."}))
	if permanent.Failure != driver.FailurePermanent || permanent.Reason != "The thing conflicts." || *permanent.Ready {
		t.Fatalf("permanent observation = %+v", permanent)
	}
	transient := driver.NamespaceDeleteFailed(id, &driver.TransientDependencyError{Dependency: driver.DependencyDocker, Code: driver.CodeDockerEngineUnavailable, Status: 503, Reason: driver.TransientUnavailable})
	if transient.Failure != driver.FailureRetryable || !strings.Contains(transient.Reason, "503") || *transient.Deleted {
		t.Fatalf("transient observation = %+v", transient)
	}
	untyped := driver.NamespaceEnsureFailed(id, errors.New("dial unix /secret/path: "+secretish))
	if untyped.Failure != driver.FailureRetryable || untyped.Reason != "Namespace preparation failed." {
		t.Fatalf("untyped observation = %+v", untyped)
	}

	valid := []struct {
		obs    driver.NamespaceObservation
		ensure bool
	}{
		{driver.NamespaceReady(id), true},
		{driver.NamespacePending(id, "waiting"), true},
		{permanent, true},
		{untyped, true},
		{driver.NamespaceDeleted(id), false},
		{driver.NamespaceDeleting(id, ""), false},
		{transient, false},
	}
	for _, v := range valid {
		check := driver.CheckDeleteObservation
		if v.ensure {
			check = driver.CheckEnsureObservation
		}
		if err := check(id, v.obs); err != nil {
			t.Errorf("valid observation %+v refused: %v", v.obs, err)
		}
	}

	readyButFailed := driver.NamespaceReady(id)
	readyButFailed.Failure = driver.FailureRetryable
	badReason := driver.NamespaceReady(id)
	badReason.Reason = "line\nbreak"
	unknownFailure := driver.NamespacePending(id, "")
	unknownFailure.Failure = "maybe"
	invalid := []struct {
		obs    driver.NamespaceObservation
		ensure bool
	}{
		{driver.NamespaceReady("ns_other"), true},
		{driver.NamespaceDeleted(id), true},
		{driver.NamespaceReady(id), false},
		{driver.NamespaceObservation{NamespaceID: id}, true},
		{readyButFailed, true},
		{badReason, true},
		{unknownFailure, true},
	}
	for _, v := range invalid {
		check := driver.CheckDeleteObservation
		if v.ensure {
			check = driver.CheckEnsureObservation
		}
		err := check(id, v.obs)
		if driver.Code(err) != driver.CodeInvalidDriverObservation {
			t.Errorf("invalid observation %+v (ensure %v) accepted: %v", v.obs, v.ensure, err)
		}
	}
}

func TestCheckRevisionReadiness(t *testing.T) {
	t.Parallel()
	rev := driver.Revision{ID: "rev_1", NamespaceID: "ns_1", AgentID: "agt_1"}
	ok := driver.RevisionReadiness{NamespaceID: "ns_1", AgentID: "agt_1", RevisionID: "rev_1", Ready: true,
		Warnings: []driver.PluginWarning{{Code: driver.WarningPluginAuthRequired, PluginID: "p1"}, {Code: driver.WarningPluginInstallFailed, PluginID: "p1"}}}
	if err := driver.CheckRevisionReadiness(rev, ok); err != nil {
		t.Fatalf("valid readiness refused: %v", err)
	}
	bad := []driver.RevisionReadiness{
		{NamespaceID: "ns_2", AgentID: "agt_1", RevisionID: "rev_1"},
		{NamespaceID: "ns_1", AgentID: "agt_2", RevisionID: "rev_1"},
		{NamespaceID: "ns_1", AgentID: "agt_1", RevisionID: "rev_2"},
		{NamespaceID: "ns_1", AgentID: "agt_1", RevisionID: "rev_1", Warnings: []driver.PluginWarning{{Code: "OTHER", PluginID: "p"}}},
		{NamespaceID: "ns_1", AgentID: "agt_1", RevisionID: "rev_1", Warnings: []driver.PluginWarning{{Code: driver.WarningPluginAuthRequired}}},
		{NamespaceID: "ns_1", AgentID: "agt_1", RevisionID: "rev_1", Warnings: []driver.PluginWarning{
			{Code: driver.WarningPluginAuthRequired, PluginID: "p"}, {Code: driver.WarningPluginAuthRequired, PluginID: "p"}}},
	}
	for _, r := range bad {
		if err := driver.CheckRevisionReadiness(rev, r); driver.Code(err) != driver.CodeInvalidDriverObservation {
			t.Errorf("invalid readiness %+v accepted", r)
		}
	}
}

func TestValidRuntimeFailure(t *testing.T) {
	t.Parallel()
	cases := []struct {
		f    *driver.RuntimeFailure
		want bool
	}{
		{nil, false},
		{&driver.RuntimeFailure{Code: driver.RuntimeAuthenticationFailed}, true},
		{&driver.RuntimeFailure{Code: "lower"}, false},
		{&driver.RuntimeFailure{Code: driver.RuntimeModelProbeFailed, Cause: &driver.RuntimeFailureCause{Kind: driver.CauseProcessExit}}, true},
		{&driver.RuntimeFailure{Code: driver.RuntimeModelProbeFailed, Cause: &driver.RuntimeFailureCause{Kind: "OTHER"}}, false},
		{&driver.RuntimeFailure{Code: driver.RuntimeModelProbeTimeout, Cause: &driver.RuntimeFailureCause{Kind: driver.CauseProcessExit}}, false},
	}
	for _, tc := range cases {
		if got := driver.ValidRuntimeFailure(tc.f); got != tc.want {
			t.Errorf("ValidRuntimeFailure(%+v) = %v, want %v", tc.f, got, tc.want)
		}
	}
}

// fakeCompute is the smallest driver.Compute, for registry tests.
type fakeCompute struct{ id, impl string }

func (f fakeCompute) ID() string             { return f.id }
func (f fakeCompute) Implementation() string { return f.impl }
func (f fakeCompute) EnsureNamespace(context.Context, driver.Namespace) (driver.NamespaceObservation, error) {
	return driver.NamespaceObservation{}, nil
}
func (f fakeCompute) DeleteNamespace(context.Context, driver.Namespace) (driver.NamespaceObservation, error) {
	return driver.NamespaceObservation{}, nil
}
func (f fakeCompute) PrepareRevision(context.Context, driver.Revision, driver.RevisionContext) (driver.RevisionReadiness, error) {
	return driver.RevisionReadiness{}, nil
}
func (f fakeCompute) StopRevision(context.Context, driver.Revision, driver.StopOptions) error {
	return nil
}
func (f fakeCompute) RetireRevision(context.Context, driver.Revision) error { return nil }

type openSchema struct{ driver.ObjectSchema }

func (openSchema) JSONSchema() map[string]any { return map[string]any{"type": "object"} }

func TestComputeRegistry(t *testing.T) {
	t.Parallel()
	impl := func(name string, production bool, reportAs string) driver.ComputeImplementation {
		return driver.ComputeImplementation{
			Name: name, Production: production, Schema: testSchema(),
			New: func(id string, _ map[string]any, _ driver.Environment) (driver.Compute, error) {
				return fakeCompute{id: id, impl: reportAs}, nil
			},
		}
	}
	r, err := driver.NewComputeRegistry(impl("prod", true, "prod"), impl("dev", false, "dev"), impl("liar", true, "other"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, i := range r.Implementations() {
		names = append(names, i.Name)
	}
	if !reflect.DeepEqual(names, []string{"dev", "liar", "prod"}) {
		t.Fatalf("Implementations = %v", names)
	}
	cfg := map[string]any{"name": "abc"}
	c, err := r.NewCompute("prod", "compute-prod", cfg, driver.Environment{Production: true})
	if err != nil || c.ID() != "compute-prod" || c.Implementation() != "prod" {
		t.Fatalf("NewCompute(prod) = %v, %v", c, err)
	}
	if _, err := r.NewCompute("dev", "compute-dev", cfg, driver.Environment{}); err != nil {
		t.Fatalf("NewCompute(dev) in development: %v", err)
	}
	if _, err := r.NewCompute("dev", "compute-dev", cfg, driver.Environment{Production: true}); driver.Code(err) != driver.CodeDriverUnavailableInProduction {
		t.Fatalf("NewCompute(dev) in production: %v", err)
	}
	if _, err := r.NewCompute("nope", "x", cfg, driver.Environment{}); driver.Code(err) != driver.CodeDriverImplementationUnknown {
		t.Fatalf("NewCompute(nope): %v", err)
	}
	var ce *driver.ConfigurationError
	if _, err := r.NewCompute("prod", "x", map[string]any{"name": "abc", "extra": true}, driver.Environment{}); !errors.As(err, &ce) || ce.Details[0].Path != "/extra" {
		t.Fatalf("NewCompute with an unknown field: %v", err)
	}
	if _, err := r.NewCompute("liar", "x", cfg, driver.Environment{}); err == nil {
		t.Fatal("a factory reporting another implementation was accepted")
	}

	if _, err := driver.NewComputeRegistry(impl("a", true, "a"), impl("a", true, "a")); err == nil {
		t.Fatal("duplicate implementation accepted")
	}
	open := impl("open", true, "open")
	open.Schema = openSchema{}
	if _, err := driver.NewComputeRegistry(open); err == nil {
		t.Fatal("open schema accepted")
	}
}

func TestCapabilityHelpers(t *testing.T) {
	t.Parallel()
	c := fakeCompute{id: "x", impl: "y"}
	if driver.SupportsHarnessAuth(c, driver.HarnessAuthRuntime) {
		t.Fatal("a driver without HarnessAuthSupport supports Harness authentication")
	}
	if driver.ActivationOrder(c) != driver.ActivationAfterCommit {
		t.Fatal("default activation order is not afterCommit")
	}
}

func collectionSchema() driver.ObjectSchema {
	root := schema.Object(
		schema.Optional("list", &schema.Schema{Type: schema.TypeArray, MinItems: 1, MaxItems: 3, CountIsValue: true, Items: &schema.Schema{
			Type: schema.TypeString, Pattern: `^[a-z]+$`,
			Rule: func(v any) (string, string) {
				if v.(string) == "bad" {
					return problem.DetailInvalidValue, "Must not be bad."
				}
				return "", ""
			},
		}}),
		schema.Optional("peers", schema.ArrayOf(schema.Object(schema.Required("ns", &schema.Schema{Type: schema.TypeString})), 0, 0)),
		schema.Optional("labels", &schema.Schema{Type: schema.TypeObject, MinMembers: 1, MaxMembers: 2, CountIsValue: true,
			KeyRule: func(k string) (string, string) {
				if strings.HasPrefix(k, "-") {
					return problem.DetailInvalidFormat, "Must be a label key."
				}
				return "", ""
			},
			Additional: &schema.Schema{Type: schema.TypeString, MaxBytes: 4, TypeMessage: `Must be a string: write "4", not 4.`}}),
		schema.Optional("auth", &schema.Schema{Type: schema.TypeObject, Discriminator: "mode",
			Variants: []schema.Variant{
				{Value: "none"},
				{Value: "file", Required: []string{"path"}, Optional: []string{"note"}},
			},
			Properties: []schema.Property{
				schema.Required("mode", schema.Enum("none", "file")),
				schema.Optional("path", &schema.Schema{Type: schema.TypeString}),
				schema.Optional("note", &schema.Schema{Type: schema.TypeString}),
			}}),
	)
	root.ObjectRule = func(cfg map[string]any) []problem.Detail {
		if l, ok := cfg["list"].([]any); ok && len(l) == 3 {
			return []problem.Detail{{Path: "/list", Code: problem.DetailInvalidValue, Message: "Cross-field rule."}}
		}
		return nil
	}
	return driver.NewObjectSchema(root)
}

func TestCollectionsAndVariants(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		cfg  map[string]any
		want []problem.Detail
	}{
		{"valid", map[string]any{"list": []any{"a", "b"}, "peers": []any{map[string]any{"ns": "x"}},
			"labels": map[string]any{"a/b": "v"}, "auth": map[string]any{"mode": "file", "path": "/p", "note": "n"}}, nil},
		{"valid variant without keys", map[string]any{"auth": map[string]any{"mode": "none"}}, nil},
		{"array type", map[string]any{"list": "a"}, []problem.Detail{{Path: "/list", Code: problem.DetailInvalidType}}},
		{"array too short", map[string]any{"list": []any{}}, []problem.Detail{{Path: "/list", Code: problem.DetailInvalidValue}}},
		{"array too long", map[string]any{"list": []any{"a", "b", "c", "d"}}, []problem.Detail{{Path: "/list", Code: problem.DetailInvalidValue}}},
		{"array items", map[string]any{"list": []any{"a", 1, "B", "bad"}[1:]},
			[]problem.Detail{{Path: "/list/0", Code: problem.DetailInvalidType}, {Path: "/list/1", Code: problem.DetailInvalidFormat}, {Path: "/list/2", Code: problem.DetailInvalidValue}}},
		{"array of objects", map[string]any{"peers": []any{map[string]any{}, map[string]any{"ns": "x", "zz": 1}}},
			[]problem.Detail{{Path: "/peers/0/ns", Code: problem.DetailRequired}, {Path: "/peers/1/zz", Code: problem.DetailUnknownField}}},
		{"map type", map[string]any{"labels": []any{}}, []problem.Detail{{Path: "/labels", Code: problem.DetailInvalidType}}},
		{"map empty", map[string]any{"labels": map[string]any{}}, []problem.Detail{{Path: "/labels", Code: problem.DetailInvalidValue}}},
		{"map too big", map[string]any{"labels": map[string]any{"a": "1", "b": "2", "c": "3"}}, []problem.Detail{{Path: "/labels", Code: problem.DetailInvalidValue}}},
		{"map keys and values", map[string]any{"labels": map[string]any{"-k": "v", "n": 4}},
			[]problem.Detail{{Path: "/labels/-k", Code: problem.DetailInvalidFormat}, {Path: "/labels/n", Code: problem.DetailInvalidType}}},
		{"map value too long", map[string]any{"labels": map[string]any{"k": secretish}}, []problem.Detail{{Path: "/labels/k", Code: problem.DetailTooLong}}},
		{"variant required", map[string]any{"auth": map[string]any{"mode": "file"}}, []problem.Detail{{Path: "/auth/path", Code: problem.DetailRequired}}},
		{"variant forbids", map[string]any{"auth": map[string]any{"mode": "none", "path": "/p"}}, []problem.Detail{{Path: "/auth/path", Code: problem.DetailUnknownField}}},
		{"variant unknown mode", map[string]any{"auth": map[string]any{"mode": "x", "path": "/p"}}, []problem.Detail{{Path: "/auth/mode", Code: problem.DetailInvalidValue}}},
		{"variant missing mode", map[string]any{"auth": map[string]any{}}, []problem.Detail{{Path: "/auth/mode", Code: problem.DetailRequired}}},
		{"root check", map[string]any{"list": []any{"a", "b", "c"}}, []problem.Detail{{Path: "/list", Code: problem.DetailInvalidValue}}},
		{"root check skipped after property errors", map[string]any{"list": []any{"a", "b", "c"}, "zz": 1}, []problem.Detail{{Path: "/zz", Code: problem.DetailUnknownField}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			checkDetails(t, collectionSchema(), tc.cfg, tc.want)
		})
	}
	// TypeMessage replaces the type sentence.
	err := collectionSchema().Validate(map[string]any{"labels": map[string]any{"cpu": 4}})
	var ce *driver.ConfigurationError
	if !errors.As(err, &ce) || ce.Details[0].Message != `Must be a string: write "4", not 4.` {
		t.Fatalf("type message: %v", err)
	}
}

func TestCollectionJSONSchema(t *testing.T) {
	t.Parallel()
	doc := collectionSchema().JSONSchema()
	props := doc["properties"].(map[string]any)
	list := props["list"].(map[string]any)
	if list["type"] != "array" || list["minItems"] != 1 || list["maxItems"] != 3 ||
		list["items"].(map[string]any)["pattern"] != `^[a-z]+$` {
		t.Fatalf("array document: %v", list)
	}
	peers := props["peers"].(map[string]any)["items"].(map[string]any)
	if peers["additionalProperties"] != false {
		t.Fatalf("array of objects not closed: %v", peers)
	}
	labels := props["labels"].(map[string]any)
	if labels["type"] != "object" || labels["minProperties"] != 1 || labels["maxProperties"] != 2 ||
		labels["additionalProperties"].(map[string]any)["type"] != "string" {
		t.Fatalf("string map document: %v", labels)
	}
	auth := props["auth"].(map[string]any)
	if auth["additionalProperties"] != false {
		t.Fatalf("discriminated object not closed: %v", auth)
	}
	oneOf := auth["oneOf"].([]any)
	want := []any{
		map[string]any{"properties": map[string]any{"mode": map[string]any{"const": "none"}, "path": false, "note": false}, "required": []string{"mode"}},
		map[string]any{"properties": map[string]any{"mode": map[string]any{"const": "file"}}, "required": []string{"mode", "path"}},
	}
	if !reflect.DeepEqual(oneOf, want) {
		t.Fatalf("oneOf = %v", oneOf)
	}
	if _, err := json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
}
