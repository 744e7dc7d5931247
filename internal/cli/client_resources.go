package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/openclaw/occ/internal/platform"
)

// Client commands of the Namespace-owned resources: configuration, secret, service-account, agent.

var (
	configurationColumns = []column{col("ID", "id"), col("KIND", "kind"), col("GENERATION", "generation"),
		{"SECRET BINDINGS", func(item map[string]any) string {
			m, _ := item["secretBindings"].(map[string]any)
			return strings.Join(sortedNames(m), ",")
		}}, col("CREATED", "createdAt")}
	secretColumns = []column{col("ID", "id"), col("NAME", "name"), {"CONSUMERS", func(item map[string]any) string {
		list, _ := item["consumers"].([]any)
		out := make([]string, 0, len(list))
		for _, c := range list {
			m, _ := c.(map[string]any)
			out = append(out, text(m["kind"])+"/"+text(m["id"]))
		}
		return strings.Join(out, ",")
	}}}
	serviceAccountColumns = []column{col("ID", "id"), col("NAME", "name"), {"CREDENTIAL", func(item map[string]any) string {
		m, _ := item["credential"].(map[string]any)
		return text(m["kind"])
	}}, col("CREATED", "createdAt")}
	agentColumns = []column{col("ID", "id"), col("NAME", "name"), col("STATUS", "status"), col("DESIRED", "desiredRuntimeState"),
		col("ACTIVE REVISION", "activeRevisionId"), col("CONFIGURATION", "configurationId"), col("CREATED", "createdAt")}
	deploymentColumns = []column{col("DEPLOYMENT", "deploymentId"), col("STATUS", "status"),
		{"LAST ATTEMPT", func(item map[string]any) string { return lastAttempt(item) }},
		{"NEXT ATTEMPT", func(item map[string]any) string {
			p, _ := item["progress"].(map[string]any)
			return text(p["nextAttemptAt"])
		}},
		{"ERROR", func(item map[string]any) string {
			e, _ := item["error"].(map[string]any)
			if e == nil {
				return ""
			}
			return text(e["code"]) + ": " + text(e["message"])
		}}}
)

func sortedNames(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func lastAttempt(item map[string]any) string {
	p, _ := item["progress"].(map[string]any)
	a, _ := p["lastAttempt"].(map[string]any)
	if a == nil {
		return ""
	}
	return text(a["code"]) + ": " + text(a["message"]) + " (" + text(a["at"]) + ")"
}

func nsPath(s *clientSession, rest string) string { return "/namespaces/" + s.namespace + rest }

// simple builds a leaf command that needs the Namespace.
func simple(env Env, use, short string, args cobra.PositionalArgs, body func(s *clientSession, args []string) error) *cobra.Command {
	return &cobra.Command{Use: use, Short: short, Args: args, RunE: clientRun(env, true, body)}
}

// getter, deleter: GET and DELETE of one resource by id.
func getter(env Env, prefix, what, list, collection string, cols []column) *cobra.Command {
	return simple(env, "get ID", "Show one "+what, cobra.ExactArgs(1), func(s *clientSession, args []string) error {
		if err := checkID(env, args[0], prefix, what, list); err != nil {
			return err
		}
		data, err := s.do("GET", nsPath(s, "/"+collection+"/"+args[0]), nil)
		if err != nil {
			return err
		}
		return s.printItem(data, cols)
	})
}

func deleter(env Env, prefix, what, kind, list, collection string) *cobra.Command {
	return simple(env, "delete ID", "Delete a "+what, cobra.ExactArgs(1), func(s *clientSession, args []string) error {
		if err := checkID(env, args[0], prefix, what, list); err != nil {
			return err
		}
		if _, err := s.do("DELETE", nsPath(s, "/"+collection+"/"+args[0]), nil); err != nil {
			return err
		}
		return s.printDeleted(kind, args[0])
	})
}

// fileCommand is create (POST) or update (PATCH ID) from --file.
func fileCommand(env Env, use, short string, nargs int, check func(body map[string]json.RawMessage) error,
	send func(s *clientSession, args []string, body []byte) error) *cobra.Command {
	var file string
	cmd := simple(env, use, short, cobra.ExactArgs(nargs), func(s *clientSession, args []string) error {
		body, err := readJSONFile(env, file)
		if err != nil {
			return err
		}
		if check != nil {
			var obj map[string]json.RawMessage
			_ = json.Unmarshal(body, &obj)
			if err := check(obj); err != nil {
				return usageError(env, "%s: %v", file, err)
			}
		}
		return send(s, args, body)
	})
	cmd.Flags().StringVar(&file, "file", "", "JSON file (a local file; no standard input, no YAML)")
	return cmd
}

// --- configuration ------------------------------------------------------------------------------

func newConfigurationCommand(env Env) *cobra.Command {
	group, _ := clientGroup("configuration", "Create, show, update and delete Configurations (the Agents' OpenClaw documents)")
	const list = "occ agent get AGENT_ID (configurationId)"
	group.AddCommand(
		fileCommand(env, "create --file FILE", "Create a Configuration from {kind, values, secretBindings?}", 0, nil,
			func(s *clientSession, _ []string, body []byte) error {
				data, err := s.do("POST", nsPath(s, "/configurations"), body)
				if err != nil {
					return err
				}
				return s.printItem(data, configurationColumns)
			}),
		getter(env, platform.PrefixConfiguration, "Configuration", list, "configurations", configurationColumns),
		fileCommand(env, "update ID --file FILE", "Replace a Configuration's values from {values, secretBindings?} (no kind)", 1,
			func(body map[string]json.RawMessage) error {
				if _, ok := body["kind"]; ok {
					return errors.New("an update carries no kind")
				}
				return nil
			},
			func(s *clientSession, args []string, body []byte) error {
				if err := checkID(env, args[0], platform.PrefixConfiguration, "Configuration", list); err != nil {
					return err
				}
				data, err := s.do("PATCH", nsPath(s, "/configurations/"+args[0]), body)
				if err != nil {
					return err
				}
				return s.printItem(data, configurationColumns)
			}),
		deleter(env, platform.PrefixConfiguration, "Configuration", "configuration", list, "configurations"),
	)
	return group
}

// --- secret -------------------------------------------------------------------------------------

func newSecretCommand(env Env) *cobra.Command {
	group, _ := clientGroup("secret", "Create, list, show, update and delete Secrets (values are never shown)")
	const list = "occ secret list"
	group.AddCommand(
		fileCommand(env, "create --file FILE", "Create a Secret from {name, value}", 0, nil,
			func(s *clientSession, _ []string, body []byte) error {
				data, err := s.do("POST", nsPath(s, "/secrets"), body)
				if err != nil {
					return err
				}
				return s.printItem(data, secretColumns)
			}),
		simple(env, "list", "List the Secrets you may read", cobra.NoArgs, func(s *clientSession, _ []string) error {
			data, err := s.do("GET", nsPath(s, "/secrets"), nil)
			if err != nil {
				return err
			}
			return s.printList(data, secretColumns)
		}),
		getter(env, platform.PrefixSecret, "Secret", list, "secrets", secretColumns),
		fileCommand(env, "update ID --file FILE", "Replace a Secret's value from {value}", 1, nil,
			func(s *clientSession, args []string, body []byte) error {
				if err := checkID(env, args[0], platform.PrefixSecret, "Secret", list); err != nil {
					return err
				}
				data, err := s.do("PATCH", nsPath(s, "/secrets/"+args[0]), body)
				if err != nil {
					return err
				}
				return s.printItem(data, secretColumns)
			}),
		deleter(env, platform.PrefixSecret, "Secret", "secret", list, "secrets"),
	)
	return group
}

// --- service-account ----------------------------------------------------------------------------

func newServiceAccountCommand(env Env) *cobra.Command {
	group, _ := clientGroup("service-account", "List, show and delete ServiceAccounts (upstream-credential holders)")
	const list = "occ service-account list"
	group.AddCommand(
		simple(env, "list", "List the ServiceAccounts you may read", cobra.NoArgs, func(s *clientSession, _ []string) error {
			data, err := s.do("GET", nsPath(s, "/service-accounts"), nil)
			if err != nil {
				return err
			}
			return s.printList(data, serviceAccountColumns)
		}),
		getter(env, platform.PrefixServiceAccount, "ServiceAccount", list, "service-accounts", serviceAccountColumns),
		deleter(env, platform.PrefixServiceAccount, "ServiceAccount", "service account", list, "service-accounts"),
	)
	return group
}

// --- agent --------------------------------------------------------------------------------------

func newAgentCommand(env Env) *cobra.Command {
	group, _ := clientGroup("agent", "Manage Agents: create, update, deploy, stop, revisions and deployment status")
	const list = "occ agent list"
	checkAgent := func(id string) error { return checkID(env, id, platform.PrefixAgent, "Agent", list) }
	group.AddCommand(
		simple(env, "list", "List the Agents you may read", cobra.NoArgs, func(s *clientSession, _ []string) error {
			data, err := s.do("GET", nsPath(s, "/agents"), nil)
			if err != nil {
				return err
			}
			return s.printList(data, agentColumns)
		}),
		getter(env, platform.PrefixAgent, "Agent", list, "agents", agentColumns),
		fileCommand(env, "create --file FILE", "Create an Agent from {name, configurationId, executionMode?, harnessAuth?}", 0, nil,
			func(s *clientSession, _ []string, body []byte) error {
				data, err := s.do("POST", nsPath(s, "/agents"), body)
				if err != nil {
					return err
				}
				return s.printItem(data, agentColumns)
			}),
		fileCommand(env, "update ID --file FILE", "Update an Agent's draft from {configurationId, name?, harnessAuth?}", 1,
			func(body map[string]json.RawMessage) error {
				if _, ok := body["configurationId"]; !ok {
					return errors.New("an update must include configurationId")
				}
				return nil
			},
			func(s *clientSession, args []string, body []byte) error {
				if err := checkAgent(args[0]); err != nil {
					return err
				}
				data, err := s.do("PATCH", nsPath(s, "/agents/"+args[0]), body)
				if err != nil {
					return err
				}
				return s.printItem(data, agentColumns)
			}),
		simple(env, "delete ID", "Delete an Agent (the worker tears it down)", cobra.ExactArgs(1), func(s *clientSession, args []string) error {
			if err := checkAgent(args[0]); err != nil {
				return err
			}
			data, err := s.do("DELETE", nsPath(s, "/agents/"+args[0]), nil)
			if err != nil {
				return err
			}
			if s.output == outputTable {
				fmt.Fprintf(env.Stdout, "Agent %s is being deleted.\n", args[0])
				return nil
			}
			return s.printStructured(data)
		}),
		simple(env, "stop ID", "Stop an Agent's runtime", cobra.ExactArgs(1), func(s *clientSession, args []string) error {
			if err := checkAgent(args[0]); err != nil {
				return err
			}
			data, err := s.do("POST", nsPath(s, "/agents/"+args[0]+"/stop"), nil)
			if err != nil {
				return err
			}
			if s.output == outputTable {
				fmt.Fprintf(env.Stdout, "Agent %s is stopping.\n", args[0])
				return nil
			}
			return s.printStructured(data)
		}),
		agentDeployCommand(env, checkAgent),
		simple(env, "revisions ID", "List an Agent's revisions (* marks the active one)", cobra.ExactArgs(1), func(s *clientSession, args []string) error {
			if err := checkAgent(args[0]); err != nil {
				return err
			}
			data, err := s.do("GET", nsPath(s, "/agents/"+args[0]+"/revisions"), nil)
			if err != nil {
				return err
			}
			if s.output != outputTable {
				return s.printList(data, nil)
			}
			agent, err := s.do("GET", nsPath(s, "/agents/"+args[0]), nil)
			if err != nil {
				return err
			}
			a, err := decodeItem(agent)
			if err != nil {
				return s.fail(err)
			}
			active := text(a["activeRevisionId"])
			return s.printList(data, []column{
				{"ACTIVE", func(item map[string]any) string {
					if active != "" && text(item["id"]) == active {
						return "*"
					}
					return " "
				}},
				col("ID", "id"), col("REVISION", "revision"), col("CONFIGURATION", "configurationId"),
				col("GENERATION", "configurationGeneration"), col("CREATED", "createdAt"),
			})
		}),
		simple(env, "deployment-status ID [DEPLOYMENT_ID]", "Show a deployment's status (default: the latest revision)", cobra.RangeArgs(1, 2),
			func(s *clientSession, args []string) error {
				if err := checkAgent(args[0]); err != nil {
					return err
				}
				deployment := ""
				if len(args) == 2 {
					if err := checkID(env, args[1], platform.PrefixRevision, "deployment", "occ agent revisions "+args[0]); err != nil {
						return err
					}
					deployment = args[1]
				} else {
					latest, err := latestRevision(s, args[0])
					if err != nil {
						return err
					}
					deployment = latest
				}
				data, err := s.do("GET", nsPath(s, "/agents/"+args[0]+"/deployments/"+deployment), nil)
				if err != nil {
					return err
				}
				return s.printItem(data, deploymentColumns)
			}),
	)
	return group
}

// latestRevision is the id of the Agent's highest-numbered revision.
func latestRevision(s *clientSession, agent string) (string, error) {
	data, err := s.do("GET", nsPath(s, "/agents/"+agent+"/revisions"), nil)
	if err != nil {
		return "", err
	}
	items, err := decodeItems(data)
	if err != nil {
		return "", s.fail(err)
	}
	best, bestN := "", -1.0
	for _, it := range items {
		n, _ := it["revision"].(json.Number)
		f, _ := n.Float64()
		if f > bestN {
			best, bestN = text(it["id"]), f
		}
	}
	if best == "" {
		fmt.Fprintf(s.env.Stderr, "Error: the Agent %s has no revision yet. Deploy it with: occ agent deploy %s\n", agent, agent)
		return "", exitError{Code: exitRequestFailed}
	}
	return best, nil
}

func agentDeployCommand(env Env, checkAgent func(string) error) *cobra.Command {
	var wait bool
	var waitTimeout time.Duration
	cmd := simple(env, "deploy ID", "Admit a new revision and deploy it (--wait follows it to the end)", cobra.ExactArgs(1),
		func(s *clientSession, args []string) error {
			if err := checkAgent(args[0]); err != nil {
				return err
			}
			if wait && waitTimeout <= 0 {
				return usageError(env, "--wait-timeout must be positive.")
			}
			data, err := s.do("POST", nsPath(s, "/agents/"+args[0]+"/deploy"), nil)
			if err != nil {
				return err
			}
			rev, err := decodeItem(data)
			if err != nil {
				return s.fail(err)
			}
			id := text(rev["id"])
			if !wait {
				if s.output == outputTable {
					fmt.Fprintf(env.Stdout, "Revision %s (deployment %s) of Agent %s is queued. Follow it with: occ agent deployment-status %s %s\n",
						sanitize(text(rev["revision"])), id, args[0], args[0], id)
					return nil
				}
				return s.printStructured(data)
			}
			return waitForDeployment(s, args[0], id, waitTimeout)
		})
	cmd.Flags().BoolVar(&wait, "wait", false, "show the deployment's progress until it succeeds or fails")
	cmd.Flags().DurationVar(&waitTimeout, "wait-timeout", 15*time.Minute, "give up waiting after this long")
	return cmd
}

// waitForDeployment polls the deployment, printing a line whenever its phase or last attempt
// changes, until it succeeds (exit 0) or fails (exit 1 with the error).
func waitForDeployment(s *clientSession, agent, deployment string, limit time.Duration) error {
	started := time.Now()
	ctx := s.cmd.Context()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	progress := s.env.Stderr // progress on stderr; stdout keeps the final result
	if s.output == outputTable {
		progress = s.env.Stdout
	}
	last := ""
	for {
		data, err := s.call("GET", nsPath(s, "/agents/"+agent+"/deployments/"+deployment), nil)
		if err != nil {
			var ae *apiError
			if !errors.As(err, &ae) || ae.Status < 500 {
				return s.fail(err)
			}
			// 5xx: keep waiting; the next poll may succeed.
		} else {
			item, err := decodeItem(data)
			if err != nil {
				return s.fail(err)
			}
			status := text(item["status"])
			line := status
			if a := lastAttempt(item); a != "" {
				line += " · last attempt " + a
			}
			if line != last {
				fmt.Fprintf(progress, "%s  %s\n", formatElapsed(time.Since(started)), sanitize(line))
				last = line
			}
			switch status {
			case "succeeded":
				if s.output == outputTable {
					fmt.Fprintf(s.env.Stdout, "Deployment %s succeeded after %s.\n", deployment, time.Since(started).Round(time.Second))
					return nil
				}
				return s.printStructured(data)
			case "failed":
				e, _ := item["error"].(map[string]any)
				fmt.Fprintf(s.env.Stderr, "Error: deployment %s failed: %s: %s\n", deployment, sanitize(text(e["code"])), sanitize(text(e["message"])))
				return exitError{Code: exitRequestFailed}
			}
		}
		if time.Since(started) > limit {
			fmt.Fprintf(s.env.Stderr, "Error: deployment %s did not finish within %s; it continues. Follow it with: occ agent deployment-status %s %s\n",
				deployment, limit, agent, deployment)
			return exitError{Code: exitRequestFailed}
		}
		select {
		case <-ctx.Done():
			fmt.Fprintf(s.env.Stderr, "Stopped waiting; deployment %s continues.\n", deployment)
			return exitError{Code: exitRequestFailed}
		case <-tick.C:
		}
	}
}

func formatElapsed(d time.Duration) string {
	d = d.Round(time.Second)
	return fmt.Sprintf("[%02d:%02d]", int(d.Minutes()), int(d.Seconds())%60)
}
