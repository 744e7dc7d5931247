package cli

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/openclaw/occ/internal/platform"
)

// occ audit list: the Installation's audit log, newest first, one page at a time.

var auditSpec = tableSpec{
	columns: []column{col("TIME", "occurredAt"), col("ACTION", "action"), col("OUTCOME", "outcome"), col("ACTOR", "actorId"),
		{"RESOURCE", func(item map[string]any) string {
			r, _ := item["resource"].(map[string]any)
			return text(r["kind"]) + "/" + text(r["id"])
		}}},
	wide: []column{col("KIND", "kind"), col("NAMESPACE", "namespaceId"), col("REASON", "reasonCode"), col("REQUEST", "requestId")},
}

func newAuditCommand(env Env) *cobra.Command {
	group, _ := clientGroup("audit", "Read the audit log (needs installation:administer)")
	var resourceKind, resourceID, since, until, cursor string
	var limit int
	var all bool
	list := &cobra.Command{
		Use:   "list [--resource-kind KIND] [--resource-id ID] [--since TIME] [--until TIME] [--limit N] [--cursor C]",
		Short: "List audit events, newest first (the Namespace's when one is set; -A for all)",
		Args:  cobra.NoArgs,
		RunE: clientRun(env, false, func(s *clientSession, _ []string) error {
			q := url.Values{}
			if !all {
				ns, err := s.optionalNamespace()
				if err != nil {
					return err
				}
				if ns != "" {
					q.Set("namespaceId", ns)
				}
			}
			if resourceKind != "" {
				q.Set("resourceKind", resourceKind)
			}
			if resourceID != "" {
				q.Set("resourceId", resourceID)
			}
			for flag, value := range map[string]string{"since": since, "until": until} {
				if value == "" {
					continue
				}
				at, err := auditTime(value, time.Now())
				if err != nil {
					return usageError(env, "--%s must be a time (2026-01-02T15:04:05Z) or a duration before now (90m, 24h).", flag)
				}
				q.Set(flag, at)
			}
			if limit < 1 || limit > 500 {
				return usageError(env, "--limit must be from 1 to 500.")
			}
			q.Set("limit", strconv.Itoa(limit))
			if cursor != "" {
				q.Set("cursor", cursor)
			}
			p, err := s.send(http.MethodGet, "/audit-events?"+q.Encode(), nil)
			if err != nil {
				return s.fail(err)
			}
			if err := s.printListOf(p.Data, auditSpec); err != nil {
				return err
			}
			if next := p.Meta.NextCursor; next != nil && *next != "" {
				// The next page's command repeats the filters, with durations turned into the
				// times they meant, so that the pages join up.
				words := []string{"occ audit list"}
				if all {
					words = append(words, "-A")
				}
				for _, flag := range []string{"resource-kind", "resource-id", "since", "until"} {
					if v := q.Get(camel(flag)); v != "" {
						words = append(words, "--"+flag+" "+quoteIfNeeded(v))
					}
				}
				if limit != 100 {
					words = append(words, "--limit "+strconv.Itoa(limit))
				}
				words = append(words, "--cursor "+*next)
				fmt.Fprintln(s.env.Stderr, "More events: "+strings.Join(words, " "))
			}
			return nil
		}),
	}
	f := list.Flags()
	f.StringVar(&resourceKind, "resource-kind", "", "only events about this resource kind (agent, namespace, service_key, …)")
	f.StringVar(&resourceID, "resource-id", "", "only events about this resource id")
	f.StringVar(&since, "since", "", "only events at or after this time, or this long ago (24h)")
	f.StringVar(&until, "until", "", "only events before this time, or this long ago")
	f.IntVar(&limit, "limit", 100, "events per page (1 to 500)")
	f.StringVar(&cursor, "cursor", "", "continue after the previous page (the command it printed)")
	f.BoolVarP(&all, "all-namespaces", "A", false, "events of every Namespace and of the Installation")
	group.AddCommand(list)
	return group
}

// auditTime accepts an RFC 3339 time or a duration before now, and returns the API's format.
func auditTime(value string, now time.Time) (string, error) {
	if d, err := time.ParseDuration(value); err == nil && d >= 0 {
		return platform.FormatTime(now.Add(-d)), nil
	}
	t, err := time.Parse(time.RFC3339Nano, value)
	if err != nil {
		return "", err
	}
	return platform.FormatTime(t), nil
}

// camel turns a flag name into the query parameter it sets (resource-kind → resourceKind).
func camel(flag string) string {
	parts := strings.Split(flag, "-")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}
