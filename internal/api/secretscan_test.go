package api_test

import (
	"context"
	"strings"
)

// scanForSecretValues runs when a test's env ends: no Secret value the test sent may appear in any
// response body, log line, audit event, revision, work row or Configuration row.
func (e *env) scanForSecretValues() {
	e.secretMu.Lock()
	values := append([]string(nil), e.secretValues...)
	e.secretMu.Unlock()
	if len(values) == 0 {
		return
	}
	ctx := context.Background()
	var stored []string
	for _, q := range []string{
		`SELECT coalesce(string_agg(row_to_json(a)::text, E'\n'), '') FROM occ.audit_events a`,
		`SELECT coalesce(string_agg(row_to_json(r)::text, E'\n'), '') FROM occ.agent_revisions r`,
		`SELECT coalesce(string_agg(row_to_json(w)::text, E'\n'), '') FROM occ.controller_work w`,
		`SELECT coalesce(string_agg(row_to_json(c)::text, E'\n'), '') FROM occ.configurations c`,
		`SELECT coalesce(string_agg(row_to_json(s)::text, E'\n'), '') FROM occ.secrets s`,
		`SELECT coalesce(string_agg(row_to_json(a)::text, E'\n'), '') FROM occ.agents a`,
	} {
		var text string
		if err := e.owner.QueryRow(ctx, q).Scan(&text); err != nil {
			e.t.Errorf("secret scan: %v", err)
			return
		}
		stored = append(stored, text)
	}
	sources := map[string]string{"responses": e.responses.String(), "logs": e.logs.String(), "database": strings.Join(stored, "\n")}
	for _, v := range values {
		for where, text := range sources {
			if strings.Contains(text, v) {
				e.t.Errorf("a Secret value reached the %s", where)
			}
		}
	}
}
