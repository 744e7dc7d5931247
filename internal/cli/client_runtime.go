package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/openclaw/occ/internal/platform"
)

// The runtime views of a deployed Agent: describe, logs and diagnose read the API's runtime
// routes; none of them needs access to the cluster.

// followInterval is how often `occ agent logs --follow` polls, as the console does.
const followInterval = 2 * time.Second

// runtimeRevision picks the revision a runtime command reads: the one given, else the Agent's
// active revision, else its latest.
func runtimeRevision(s *clientSession, agentRef, agent string, given string) (string, error) {
	if given != "" {
		if err := checkID(s.env, given, platform.PrefixRevision, "revision", "occ agent revisions "+agentRef); err != nil {
			return "", err
		}
		return given, nil
	}
	var a struct {
		ActiveRevisionID string `json:"activeRevisionId"`
	}
	if err := s.getInto(agentPath(s, agent), &a); err != nil {
		return "", s.fail(err)
	}
	if a.ActiveRevisionID != "" {
		return a.ActiveRevisionID, nil
	}
	return latestRevision(s, agentRef, agent)
}

func revisionFlag(cmd *cobra.Command, rev *string) {
	cmd.Flags().StringVar(rev, "revision", "", "the revision (rev_…) to read; default: the active revision, else the latest")
}

func agentDescribeCommand(env Env) *cobra.Command {
	var revision string
	cmd := simple(env, "describe NAME|ID", "Show an Agent, its revision's deployment and what its runtime does now", cobra.ExactArgs(1),
		func(s *clientSession, args []string) error {
			id, err := s.resolve(agentKind, args[0])
			if err != nil {
				return err
			}
			agent, err := s.do(http.MethodGet, agentPath(s, id), nil)
			if err != nil {
				return err
			}
			rev, err := runtimeRevision(s, args[0], id, revision)
			if err != nil {
				return err
			}
			base := agentPath(s, id) + "/deployments/" + rev
			deployment, err := s.do(http.MethodGet, base, nil)
			if err != nil {
				return err
			}
			// The runtime view needs agent:operate and a Compute Driver that offers it; without
			// either, describe still shows the rest and says why the view is missing.
			runtime, rerr := s.call(http.MethodGet, base+"/runtime", nil)
			if s.structured() {
				doc := map[string]json.RawMessage{"agent": agent, "deployment": deployment, "runtime": runtime}
				if rerr != nil {
					doc["runtime"] = json.RawMessage("null")
				}
				raw, _ := json.Marshal(doc)
				return s.printStructured(raw)
			}
			printDescription(s, agent, deployment, runtime, rerr)
			return nil
		})
	cmd.ValidArgsFunction = completeArgs(agentKind)
	revisionFlag(cmd, &revision)
	return cmd
}

// describedRuntime is the part of GET …/runtime describe prints.
type describedRuntime struct {
	Pods []struct {
		Name, Role, Phase string
		Ready             bool
		Containers        []struct {
			Name, State     string
			Reason          *string
			Ready           bool
			RestartCount    int
			LastTermination *struct {
				Reason     *string
				ExitCode   int
				FinishedAt *string
			}
			Image string
		}
		Events []struct {
			Type, Reason, Message string
			Count                 int
			LastObservedAt        *string
		}
	}
}

func printDescription(s *clientSession, agentRaw, deploymentRaw, runtimeRaw json.RawMessage, runtimeErr error) {
	var agent, deployment map[string]any
	_ = json.Unmarshal(agentRaw, &agent)
	_ = json.Unmarshal(deploymentRaw, &deployment)
	out := s.env.Stdout
	line := func(label, value string) { fmt.Fprintf(out, "%-18s %s\n", label+":", orDash(sanitize(value))) }
	line("Agent", text(agent["name"])+" ("+text(agent["id"])+")")
	line("Desired state", text(agent["desiredRuntimeState"]))
	line("Active revision", text(agent["activeRevisionId"]))
	line("Revision", text(deployment["deploymentId"]))
	line("Deployment", text(deployment["status"]))
	if e, ok := deployment["error"].(map[string]any); ok {
		line("Error", text(e["code"])+": "+text(e["message"]))
	}
	if p, ok := deployment["progress"].(map[string]any); ok {
		if a, ok := p["lastAttempt"].(map[string]any); ok {
			line("Last attempt", text(a["code"])+": "+text(a["message"]))
		}
	}
	fmt.Fprintln(out)
	if runtimeErr != nil {
		var ae *apiError
		reason := runtimeErr.Error()
		if errors.As(runtimeErr, &ae) {
			reason = ae.Code + ": " + ae.Message
		}
		fmt.Fprintf(out, "Runtime: not shown (%s)\n", sanitize(reason))
		return
	}
	var rt describedRuntime
	_ = json.Unmarshal(runtimeRaw, &rt)
	if len(rt.Pods) == 0 {
		fmt.Fprintln(out, "Runtime: no Pod of this revision runs.")
		return
	}
	w := tabwriter.NewWriter(out, 0, 0, 3, ' ', 0)
	fmt.Fprintln(w, "POD\tROLE\tPHASE\tCONTAINER\tSTATE\tREADY\tRESTARTS\tLAST TERMINATION")
	for _, p := range rt.Pods {
		for _, c := range p.Containers {
			state := c.State
			if c.Reason != nil {
				state += " (" + *c.Reason + ")"
			}
			last := ""
			if lt := c.LastTermination; lt != nil {
				last = "exit " + strconv.Itoa(lt.ExitCode)
				if lt.Reason != nil {
					last += " " + *lt.Reason
				}
				if lt.FinishedAt != nil {
					last += " at " + *lt.FinishedAt
				}
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%t\t%d\t%s\n", sanitize(p.Name), p.Role, sanitize(p.Phase), sanitize(c.Name),
				sanitize(state), c.Ready, c.RestartCount, orDash(sanitize(last)))
		}
	}
	_ = w.Flush()
	fmt.Fprintln(out)
	fmt.Fprintln(out, "Events (newest first):")
	shown := false
	for _, p := range rt.Pods {
		for _, e := range p.Events {
			shown = true
			at := ""
			if e.LastObservedAt != nil {
				at = *e.LastObservedAt
			}
			fmt.Fprintf(out, "  %s %s %s x%d %s: %s\n", orDash(at), sanitize(p.Name), e.Type, e.Count, sanitize(e.Reason), sanitize(e.Message))
		}
	}
	if !shown {
		fmt.Fprintln(out, "  none")
	}
}

func agentDiagnoseCommand(env Env) *cobra.Command {
	var revision string
	cmd := simple(env, "diagnose NAME|ID", "Run the Compute Driver's checks of an Agent's runtime now", cobra.ExactArgs(1),
		func(s *clientSession, args []string) error {
			id, err := s.resolve(agentKind, args[0])
			if err != nil {
				return err
			}
			rev, err := runtimeRevision(s, args[0], id, revision)
			if err != nil {
				return err
			}
			data, err := s.do(http.MethodPost, agentPath(s, id)+"/deployments/"+rev+"/diagnostics", nil)
			if err != nil {
				return err
			}
			if s.structured() {
				return s.printStructured(data)
			}
			var out struct {
				Checks []map[string]any `json:"checks"`
			}
			if err := json.Unmarshal(data, &out); err != nil {
				return s.fail(errors.New("the API answered with unexpected diagnostics"))
			}
			fmt.Fprintf(s.env.Stdout, "Revision %s:\n", rev)
			s.printTable(out.Checks, []column{col("COMPONENT", "component"), col("CHECK", "check"), col("STATE", "state"),
				col("CODE", "code"), col("CHECKED", "checkedAt")})
			for _, c := range out.Checks {
				if c["state"] == "failed" {
					return exitError{Code: exitRequestFailed}
				}
			}
			return nil
		})
	cmd.ValidArgsFunction = completeArgs(agentKind)
	revisionFlag(cmd, &revision)
	return cmd
}

type logsOptions struct {
	revision, source, pod, level string
	tail                         int
	since                        time.Duration
	previous, follow             bool
}

func agentLogsCommand(env Env) *cobra.Command {
	var o logsOptions
	cmd := simple(env, "logs NAME|ID", "Print an Agent's redacted container output (a bounded page; --follow keeps polling)", cobra.ExactArgs(1),
		func(s *clientSession, args []string) error {
			if err := o.check(s); err != nil {
				return err
			}
			id, err := s.resolve(agentKind, args[0])
			if err != nil {
				return err
			}
			rev, err := runtimeRevision(s, args[0], id, o.revision)
			if err != nil {
				return err
			}
			if o.revision == "" {
				fmt.Fprintf(s.env.Stderr, "Reading revision %s.\n", rev)
			}
			return followLogs(s, agentPath(s, id)+"/deployments/"+rev+"/runtime/logs", o)
		})
	cmd.ValidArgsFunction = completeArgs(agentKind)
	revisionFlag(cmd, &o.revision)
	f := cmd.Flags()
	f.StringVarP(&o.source, "container", "c", "gateway", "the log source: gateway, or agent (the dedicated Harness)")
	f.StringVar(&o.source, "source", "gateway", "the log source (the same as --container)")
	f.StringVar(&o.pod, "pod", "", "one of the source's Pods (occ agent describe); default: the newest")
	f.IntVar(&o.tail, "tail", 200, "lines to read, 1..1000")
	f.DurationVar(&o.since, "since", 0, "only lines of this last duration (1s..24h)")
	f.BoolVar(&o.previous, "previous", false, "read the container's previous instance (after a restart)")
	f.BoolVarP(&o.follow, "follow", "f", false, "keep polling for new lines every 2 s until interrupted")
	f.StringVar(&o.level, "level", "info", "the lowest level shown: error, warn, info or debug (lines of unknown level always show)")
	_ = cmd.RegisterFlagCompletionFunc("container", fixedCompletion("gateway", "agent"))
	_ = cmd.RegisterFlagCompletionFunc("level", fixedCompletion("error", "warn", "info", "debug"))
	return cmd
}

func (o logsOptions) check(s *clientSession) error {
	switch {
	case o.source != "gateway" && o.source != "agent":
		return usageError(s.env, "--container must be gateway or agent.")
	case o.tail < 1 || o.tail > 1000:
		return usageError(s.env, "--tail must be 1..1000.")
	case o.since != 0 && (o.since < time.Second || o.since > 24*time.Hour):
		return usageError(s.env, "--since must be between 1s and 24h.")
	case !slices.Contains([]string{"error", "warn", "info", "debug"}, o.level):
		return usageError(s.env, "--level must be error, warn, info or debug.")
	case o.follow && o.previous:
		return usageError(s.env, "--follow reads the current instance; it cannot follow --previous.")
	}
	return nil
}

func (o logsOptions) query(cursor string) string {
	q := url.Values{"source": {o.source}, "tailLines": {strconv.Itoa(o.tail)}, "minLevel": {o.level}}
	if o.pod != "" {
		q.Set("pod", o.pod)
	}
	if o.previous {
		q.Set("previous", "true")
	}
	if o.since > 0 && cursor == "" {
		q.Set("sinceSeconds", strconv.Itoa(int(o.since/time.Second)))
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	return q.Encode()
}

// logPage is one page of GET …/runtime/logs.
type logPage struct {
	Records []json.RawMessage `json:"records"`
	Cursor  *string           `json:"cursor"`
}

type logRecord struct {
	Type      string         `json:"type"`
	Time      *string        `json:"time"`
	Kind      string         `json:"kind"`
	Level     string         `json:"level"`
	Message   string         `json:"message"`
	Subsystem string         `json:"subsystem"`
	Fields    map[string]any `json:"fields"`
	Count     int            `json:"count"`
	Reason    string         `json:"reason"`
	Remedy    string         `json:"remedy"`
}

// followLogs prints one page, and with --follow keeps polling with the page's cursor. A 429 is
// waited out (Retry-After); Ctrl-C ends the follow.
func followLogs(s *clientSession, path string, o logsOptions) error {
	ctx := s.cmd.Context()
	cursor := ""
	for {
		data, err := s.call(http.MethodGet, path+"?"+o.query(cursor), nil)
		var ae *apiError
		if errors.As(err, &ae) && ae.Status == http.StatusTooManyRequests {
			wait, _ := strconv.Atoi(ae.RetryAfter)
			if !sleepCtx(ctx, time.Duration(max(wait, 1))*time.Second) {
				return nil
			}
			continue
		}
		if err != nil {
			return s.fail(err)
		}
		var p logPage
		if err := json.Unmarshal(data, &p); err != nil {
			return s.fail(errors.New("the API answered with an unexpected log page"))
		}
		for _, raw := range p.Records {
			printLogRecord(s, raw)
		}
		if !o.follow || p.Cursor == nil {
			return nil
		}
		cursor = *p.Cursor
		if !sleepCtx(ctx, followInterval) {
			return nil
		}
	}
}

func printLogRecord(s *clientSession, raw json.RawMessage) {
	if s.output == outputJSON {
		var b bytes.Buffer
		if json.Compact(&b, raw) == nil {
			b.WriteByte('\n')
			_, _ = s.env.Stdout.Write(b.Bytes())
		}
		return
	}
	var r logRecord
	if json.Unmarshal(raw, &r) != nil {
		return
	}
	when := "-"
	if r.Time != nil {
		when = *r.Time
	}
	switch r.Type {
	case "gap":
		fmt.Fprintf(s.env.Stderr, "--- %s gap (%s): %s\n", when, sanitize(r.Reason), sanitize(r.Remedy))
	case "withheld":
		fmt.Fprintf(s.env.Stderr, "--- %s %d line(s) withheld (%s)\n", when, r.Count, sanitize(r.Reason))
	default:
		sub := ""
		if r.Subsystem != "" {
			sub = " [" + r.Subsystem + "]"
		}
		var fields strings.Builder
		for _, k := range sortedKeys(r.Fields) {
			fmt.Fprintf(&fields, " %s=%v", k, r.Fields[k])
		}
		fmt.Fprintln(s.env.Stdout, sanitize(fmt.Sprintf("%s %s %s%s %s%s", when, strings.ToUpper(r.Level), r.Kind, sub, r.Message, fields.String())))
	}
}

// sleepCtx waits d; it reports false when the command was interrupted first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
