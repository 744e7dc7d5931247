package main

import (
	"bytes"
	"regexp"
	"testing"
)

func TestEvaluateGoals(t *testing.T) {
	values := map[string]float64{
		"queuebench occ burn-down":                   6000,
		"queuebench river burn-down":                 5000,
		"apiload get-namespace throughput":           4000,
		"apiload ceiling-get-namespace throughput":   10000,
		"apiload deploy throughput":                  400,
		"apiload create-namespace worker drain rate": 999,
		"apiload list-agents throughput":             100,
		"apiload ceiling-list-agents throughput":     0, // an anchor of zero measures nothing
	}
	byWhat := map[string]goalRow{}
	for _, r := range evaluateGoals(values) {
		byWhat[r.what] = r
	}
	for what, want := range map[string]struct {
		measured, met bool
		got           float64
	}{
		"queue burn-down vs River":             {true, true, 1.2},
		"get Namespace vs bare net/http + pgx": {true, false, 0.4},
		"deploy, 16 clients, one Namespace":    {true, true, 400},
		"worker drains Namespace ensures":      {true, false, 999},
		"list 1 000 Agents vs bare list":       {false, false, 100},
		"create Agent":                         {false, false, 0},
	} {
		r := byWhat[what]
		if r.measured != want.measured || r.met != want.met || r.got != want.got {
			t.Errorf("%s: measured %v met %v got %v, want %+v", what, r.measured, r.met, r.got, want)
		}
	}
	var out bytes.Buffer
	printGoals(&out, evaluateGoals(values))
	for _, line := range []string{`queue burn-down vs River\s+6000\s+5000\s+1\.20×\s+≥ 1×\s+yes`,
		`create Agent\s+-\s+-\s+-\s+≥ 1000\s+not measured`, `goals met: 2 of 7`} {
		if !regexp.MustCompile(line).MatchString(out.String()) {
			t.Errorf("goals table lacks %q:\n%s", line, out.String())
		}
	}
}
