package platform

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/openclaw/occ/internal/iam"
	"github.com/openclaw/occ/internal/problem"
)

func TestNamespaceRemainsMessage(t *testing.T) {
	t.Parallel()
	one := NamespaceRemainsMessage([]ResourceRef{{Kind: "secret", ID: "sec_1"}})
	if !strings.HasPrefix(one, "The Namespace still holds ") || !strings.HasSuffix(one, " secret sec_1.") {
		t.Fatalf("%q", one)
	}
	var many []ResourceRef
	for i := 0; i < 40; i++ {
		many = append(many, ResourceRef{Kind: "agent", ID: fmt.Sprintf("agt_%08d-0000-4000-8000-000000000000", i)})
	}
	msg := NamespaceRemainsMessage(many)
	if n := utf8.RuneCountInString(msg); n > 256 || !strings.HasSuffix(msg, ", …") {
		t.Fatalf("%d %q", n, msg)
	}
}

func TestErrorsAndPointers(t *testing.T) {
	t.Parallel()
	for _, code := range Codes() {
		if StatusOf(code) < 400 {
			t.Errorf("%s: %d", code, StatusOf(code))
		}
	}
	if StatusOf("NOPE") != 500 || StatusOf(CodeRateLimited) != 429 || StatusOf(CodeUnknownOutcome) != 503 {
		t.Fatal("status table")
	}
	if e := NewError(CodeInvalidRequest, strings.Repeat("é", 300)); utf8.RuneCountInString(e.Message) != 256 {
		t.Fatalf("message %d", utf8.RuneCountInString(e.Message))
	}
	if problem.JSONPointer("a/b", "~c") != "/a~1b/~0c" || problem.JSONPointer() != "" {
		t.Fatal("pointer escaping")
	}
	if _, ok := ParseTime("2026-02-30T00:00:00.000Z"); ok {
		t.Fatal("impossible date accepted")
	}
	if ts, ok := ParseTime("2026-02-28T10:11:12.345Z"); !ok || FormatTime(ts) != "2026-02-28T10:11:12.345Z" {
		t.Fatal("timestamp round trip")
	}
}

func TestNamespaceRolePermissions(t *testing.T) {
	t.Parallel()
	p := func(a, k string) iam.Permission { return iam.Permission{Action: a, ResourceKind: k} }
	if d := ValidateNamespaceRolePermissions([]iam.Permission{p("read", "namespace"), p("deploy", "agent")}); len(d) != 0 {
		t.Fatalf("valid role refused: %v", d)
	}
	d := ValidateNamespaceRolePermissions([]iam.Permission{p("delete", "namespace"), p("update", "agent_revision"), p("read", "secret"), p("read", "secret")})
	if fmt.Sprint(d) != "[{/permissions/0 INVALID_VALUE} {/permissions/1 INVALID_VALUE} {/permissions/3 INVALID_VALUE}]" {
		t.Fatalf("%v", d)
	}
	sorted := SortPermissions([]iam.Permission{p("deploy", "agent"), p("read", "namespace"), p("read", "agent")})
	if fmt.Sprint(sorted) != "[{read namespace} {read agent} {deploy agent}]" {
		t.Fatalf("%v", sorted)
	}
}
