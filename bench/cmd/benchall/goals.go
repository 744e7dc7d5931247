package main

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// goal is one target of the performance issue: a figure of this run, either against an anchor
// measured in the same run (a ratio) or against a fixed rate.
type goal struct {
	what   string
	figure string
	anchor string  // a figure of the same run; empty for a fixed rate
	want   float64 // the ratio figure/anchor, or the figure itself when anchor is empty
}

// goals lists the targets of the performance issue (docs/performance.md, "Goals"), by the names
// the tools give their figures.
var goals = []goal{
	{"queue burn-down vs River", "queuebench occ burn-down", "queuebench river burn-down", 1.0},
	{"worker drains Namespace ensures", "apiload create-namespace worker drain rate", "", 1000},
	{"get Namespace vs bare net/http + pgx", "apiload get-namespace throughput", "apiload ceiling-get-namespace throughput", 0.5},
	{"list 1 000 Agents vs bare list", "apiload list-agents throughput", "apiload ceiling-list-agents throughput", 0.6},
	{"deploy, 16 clients, one Namespace", "apiload deploy throughput", "", 400},
	{"create Namespace", "apiload create-namespace throughput", "", 1000},
	{"create Agent", "apiload create-agent throughput", "", 1000},
}

// goalRow is one goal evaluated against a run's figures.
type goalRow struct {
	goal
	value, anchorValue, got float64
	measured, met           bool
}

// evaluateGoals reads each goal's figure (and anchor) from values, keyed by figure name; a goal
// whose figure or anchor the run did not produce is reported as not measured, never as met.
func evaluateGoals(values map[string]float64) []goalRow {
	rows := make([]goalRow, len(goals))
	for i, g := range goals {
		r := goalRow{goal: g}
		v, ok := values[g.figure]
		r.value, r.got, r.measured = v, v, ok
		if g.anchor != "" {
			a, ok := values[g.anchor]
			r.anchorValue = a
			r.measured = r.measured && ok && a > 0
			if r.measured {
				r.got = v / a
			}
		}
		r.met = r.measured && r.got >= g.want
		rows[i] = r
	}
	return rows
}

// printGoals writes the goals table: each figure beside its anchor, the ratio, the goal and
// whether this run met it.
func printGoals(w io.Writer, rows []goalRow) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "goal\tfigure\tanchor\tratio\twant\tmet")
	met := 0
	for _, r := range rows {
		figure, anchor, ratio, want, verdict := "-", "-", "-", "", "not measured"
		if r.anchor != "" {
			want = "≥ " + format(r.want) + "×"
		} else {
			want = "≥ " + format(r.want)
		}
		if r.measured {
			figure = format(r.value)
			verdict = "no"
			if r.anchor != "" {
				anchor, ratio = format(r.anchorValue), format(r.got)+"×"
			}
		}
		if r.met {
			verdict = "yes"
			met++
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.what, figure, anchor, ratio, want, verdict)
	}
	tw.Flush()
	fmt.Fprintf(w, "goals met: %d of %d\n", met, len(rows))
}
