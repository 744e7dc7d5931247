package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/openclaw/occ/internal/platform"
)

// Client commands of Agents: create, update, deploy, stop, delete, revisions and deployment status.

// agentView is the part of an Agent the client reads.
type agentView struct {
	ID                  string                `json:"id"`
	NamespaceID         string                `json:"namespaceId"`
	Name                string                `json:"name"`
	ConfigurationID     string                `json:"configurationId"`
	ExecutionMode       string                `json:"executionMode"`
	DesiredRuntimeState string                `json:"desiredRuntimeState"`
	ActiveRevisionID    *string               `json:"activeRevisionId"`
	HarnessAuth         *platform.HarnessAuth `json:"harnessAuth"`
	Status              string                `json:"status"`
}

// revisionView is the part of a revision the client reads.
type revisionView struct {
	ID       string `json:"id"`
	Revision int64  `json:"revision"`
}

// deploymentView is a deployment's status.
type deploymentView struct {
	DeploymentID string `json:"deploymentId"`
	Status       string `json:"status"`
	Progress     *struct {
		LastAttempt *struct {
			At      string `json:"at"`
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"lastAttempt"`
		NextAttemptAt *string `json:"nextAttemptAt"`
	} `json:"progress"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// line is the deployment's state as a progress line.
func (d deploymentView) line() string {
	line := d.Status
	if d.Progress != nil && d.Progress.LastAttempt != nil {
		a := d.Progress.LastAttempt
		line += " · last attempt " + a.Code + ": " + a.Message + " (" + a.At + ")"
	}
	return line
}

var (
	agentSpec = tableSpec{
		columns: []column{col("ID", "id"), col("NAME", "name"), col("STATUS", "status"), col("DESIRED", "desiredRuntimeState"),
			col("ACTIVE REVISION", "activeRevisionId"), col("CONFIGURATION", "configurationId"), col("CREATED", "createdAt")},
		wide: []column{col("MODE", "executionMode"), {"HARNESS AUTH", func(item map[string]any) string {
			m, _ := item["harnessAuth"].(map[string]any)
			if m == nil {
				return ""
			}
			out := text(m["method"])
			if src, _ := m["source"].(map[string]any); src != nil {
				out += " (" + text(src["kind"]) + " " + text(src["id"]) + ")"
			}
			return out
		}}, col("SERVICE PRINCIPAL", "servicePrincipalId")},
	}
	deploymentSpec = tableSpec{idField: "deploymentId", columns: []column{col("DEPLOYMENT", "deploymentId"), col("STATUS", "status"),
		{"LAST ATTEMPT", lastAttempt},
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
		}}}}
)

func lastAttempt(item map[string]any) string {
	p, _ := item["progress"].(map[string]any)
	a, _ := p["lastAttempt"].(map[string]any)
	if a == nil {
		return ""
	}
	return text(a["code"]) + ": " + text(a["message"]) + " (" + text(a["at"]) + ")"
}

func agentPath(s *clientSession, id string) string { return nsPath(s, "/agents/"+id) }

func newAgentCommand(env Env) *cobra.Command {
	group, _ := clientGroup("agent", "Manage Agents: create, update, deploy, stop, revisions, deployment status and what the runtime does")
	group.AddCommand(
		listCommand(env, "List the Agents you may read", agentSpec, true, func(s *clientSession) string { return nsPath(s, "/agents") }),
		getCommand(env, agentKind, agentSpec, true, agentPath),
		agentCreateCommand(env),
		agentUpdateCommand(env),
		agentDeleteCommand(env),
		agentStopCommand(env),
		agentDeployCommand(env),
		agentRevisionsCommand(env),
		agentDeploymentStatusCommand(env),
		agentDescribeCommand(env),
		agentLogsCommand(env),
		agentDiagnoseCommand(env),
	)
	return group
}

// harnessAuthFlags are the per-field flags of an Agent's Harness authentication.
type harnessAuthFlags struct {
	method, secret, serviceAccount string
}

func (h *harnessAuthFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&h.method, "auth", "", "Harness authentication: runtime, api_key or codex_pat (api_key when only --secret is given)")
	cmd.Flags().StringVar(&h.secret, "secret", "", "the Secret (name or id) of api_key or codex_pat")
	cmd.Flags().StringVar(&h.serviceAccount, "service-account", "", "the ServiceAccount (name or id) of codex_pat")
	_ = cmd.RegisterFlagCompletionFunc("auth", fixedCompletion(platform.HarnessAuthRuntime, platform.HarnessAuthAPIKey, platform.HarnessAuthCodexPAT))
	completeFlag(cmd, "secret", secretKind)
	completeFlag(cmd, "service-account", serviceAccountKind)
}

func (h *harnessAuthFlags) given() bool {
	return h.method != "" || h.secret != "" || h.serviceAccount != ""
}

// into adds the flags' harnessAuth (when any is given) to doc and encodes it.
func (h *harnessAuthFlags) into(s *clientSession, doc map[string]any) ([]byte, error) {
	ha, err := h.build(s)
	if err != nil {
		return nil, err
	}
	if ha != nil {
		doc["harnessAuth"] = ha
	}
	return json.Marshal(doc)
}

// build resolves the flags into a harnessAuth value (nil when none is given).
func (h *harnessAuthFlags) build(s *clientSession) (*platform.HarnessAuth, error) {
	if !h.given() {
		return nil, nil
	}
	method := h.method
	if method == "" && h.secret != "" {
		method = platform.HarnessAuthAPIKey
	}
	if method == "" && h.serviceAccount != "" {
		method = platform.HarnessAuthCodexPAT
	}
	if h.secret != "" && h.serviceAccount != "" {
		return nil, usageError(s.env, "--secret and --service-account exclude each other: the Harness reads one source.")
	}
	ha := &platform.HarnessAuth{Method: method}
	switch method {
	case platform.HarnessAuthRuntime:
		if h.secret != "" || h.serviceAccount != "" {
			return nil, usageError(s.env, "--auth runtime takes no --secret or --service-account.")
		}
	case platform.HarnessAuthAPIKey, platform.HarnessAuthCodexPAT:
		switch {
		case h.secret != "":
			id, err := s.resolve(secretKind, h.secret)
			if err != nil {
				return nil, err
			}
			ha.Source = &platform.Ref{Kind: platform.RefKindSecret, NamespaceID: s.namespace, ID: id}
		case h.serviceAccount != "" && method == platform.HarnessAuthCodexPAT:
			id, err := s.resolve(serviceAccountKind, h.serviceAccount)
			if err != nil {
				return nil, err
			}
			ha.Source = &platform.Ref{Kind: platform.RefKindServiceAccount, NamespaceID: s.namespace, ID: id}
		case h.serviceAccount != "":
			return nil, usageError(s.env, "--auth api_key reads a Secret: use --secret, not --service-account.")
		default:
			sources := "--secret NAME"
			if method == platform.HarnessAuthCodexPAT {
				sources += " or --service-account NAME"
			}
			return nil, usageError(s.env, "--auth %s needs its source: %s.", method, sources)
		}
	default:
		return nil, usageError(s.env, "--auth must be runtime, api_key or codex_pat.")
	}
	return ha, nil
}

func agentCreateCommand(env Env) *cobra.Command {
	var file, configuration, mode string
	var auth harnessAuthFlags
	var fromPreset presetFlags
	cmd := &cobra.Command{
		Use: "create NAME --configuration ID [--mode embedded|dedicated] [--auth METHOD] [--secret NAME] | " +
			"create [NAME] --preset PRESET [--set VAR=VALUE]... [--set-file VAR=PATH]... | create -f FILE",
		Short: "Create an Agent from flags, from a Preset, or from a {name, configurationId, executionMode?, harnessAuth?} document",
		Long: `Create an Agent from flags, from a Preset, or from a document.

With --preset the CLI reads the Preset, fills its variables from --set and --set-file (a declared
"name" variable defaults to NAME), renders it, and creates what it describes: a Secret NAME-harness
when the template puts a password variable in harnessAuth.secret, the Configuration, then the
Agent. --mode and the Harness authentication flags replace the Preset's.`,
		Args: cobra.RangeArgs(0, 1),
		RunE: clientRun(env, true, func(s *clientSession, args []string) error {
			if mode != "" && mode != platform.ExecutionEmbedded && mode != platform.ExecutionDedicated {
				return usageError(env, "--mode must be embedded or dedicated.")
			}
			if fromPreset.given() {
				if fromPreset.name == "" {
					return usageError(env, "--set and --set-file fill the variables of a Preset: give --preset NAME.")
				}
				if file != "" || configuration != "" {
					return usageError(env, "--preset composes the Configuration itself: give it without -f FILE or --configuration.")
				}
				name := ""
				if len(args) > 0 {
					if err := checkName(env, args[0]); err != nil {
						return err
					}
					name = args[0]
				}
				data, err := fromPreset.createFromPreset(s, name, mode, &auth)
				if err != nil {
					return err
				}
				return s.printItemOf(data, agentSpec)
			}
			flags := len(args) > 0 || configuration != "" || mode != "" || auth.given()
			body, err := documentOrFlags(env, file, flags, func() ([]byte, error) {
				if len(args) == 0 {
					return nil, usageError(env, "give the Agent's NAME and --configuration ID, or -f FILE.")
				}
				if err := checkName(env, args[0]); err != nil {
					return nil, err
				}
				if configuration == "" {
					return nil, usageError(env, "--configuration is required: the id of the Agent's Configuration (occ configuration create prints it).")
				}
				cfg, err := s.resolve(configurationKind, configuration)
				if err != nil {
					return nil, err
				}
				doc := map[string]any{"name": args[0], "configurationId": cfg}
				if mode != "" {
					doc["executionMode"] = mode
				}
				return auth.into(s, doc)
			})
			if err != nil {
				return err
			}
			data, err := s.do(http.MethodPost, nsPath(s, "/agents"), body)
			if err != nil {
				return err
			}
			return s.printItemOf(data, agentSpec)
		}),
	}
	fileFlag(cmd, &file, "the Agent")
	cmd.Flags().StringVar(&configuration, "configuration", "", "the Configuration's id (cfg_…)")
	cmd.Flags().StringVar(&mode, "mode", "", "execution mode: embedded (OpenClaw, the default) or dedicated (Codex)")
	_ = cmd.RegisterFlagCompletionFunc("mode", fixedCompletion(platform.ExecutionEmbedded, platform.ExecutionDedicated))
	auth.register(cmd)
	fromPreset.register(cmd)
	return cmd
}

func agentUpdateCommand(env Env) *cobra.Command {
	var file, configuration string
	var auth harnessAuthFlags
	cmd := &cobra.Command{
		Use:   "update NAME|ID (-f FILE | [--configuration ID] [--auth METHOD] [--secret NAME])",
		Short: "Update an Agent's draft from a {configurationId, name?, harnessAuth?} document or from flags",
		Args:  cobra.ExactArgs(1), ValidArgsFunction: completeArgs(agentKind),
		RunE: clientRun(env, true, func(s *clientSession, args []string) error {
			id, err := s.resolve(agentKind, args[0])
			if err != nil {
				return err
			}
			body, err := documentOrFlags(env, file, configuration != "" || auth.given(), func() ([]byte, error) {
				if configuration == "" && !auth.given() {
					return nil, usageError(env, "give the update with -f FILE, --configuration ID or --auth METHOD.")
				}
				cfg := ""
				if configuration != "" {
					if cfg, err = s.resolve(configurationKind, configuration); err != nil {
						return nil, err
					}
				} else {
					var a agentView // an update always names the Configuration: keep the current one
					if err := s.getInto(agentPath(s, id), &a); err != nil {
						return nil, s.fail(err)
					}
					cfg = a.ConfigurationID
				}
				return auth.into(s, map[string]any{"configurationId": cfg})
			})
			if err != nil {
				return err
			}
			if file != "" {
				var obj map[string]json.RawMessage
				_ = json.Unmarshal(body, &obj)
				if _, ok := obj["configurationId"]; !ok {
					return usageError(env, "%s: an update must include configurationId", fileLabel(file))
				}
			}
			data, err := s.do(http.MethodPatch, agentPath(s, id), body)
			if err != nil {
				return err
			}
			return s.printItemOf(data, agentSpec)
		}),
	}
	fileFlag(cmd, &file, "the update")
	cmd.Flags().StringVar(&configuration, "configuration", "", "the new Configuration's id (default: keep the current one)")
	auth.register(cmd)
	return cmd
}

// agentOperation is a request on one Agent (delete, stop) whose --wait follows it to its end.
func agentOperation(env Env, use, short, until string, limit time.Duration, method, suffix, doing, done string,
	wait func(s *clientSession, id, label string, limit time.Duration) error) *cobra.Command {
	var w waitFlags
	cmd := simple(env, use, short, cobra.ExactArgs(1), func(s *clientSession, args []string) error {
		if err := w.check(env); err != nil {
			return err
		}
		id, err := s.resolve(agentKind, args[0])
		if err != nil {
			return err
		}
		label := refLabel(args[0], id)
		data, err := s.do(method, agentPath(s, id)+suffix, nil)
		if err != nil {
			return err
		}
		if !w.wait {
			return s.report(data, id, fmt.Sprintf("Agent %s is %s.", label, doing))
		}
		if err := wait(s, id, label, w.timeout); err != nil {
			return err
		}
		return s.report(data, id, fmt.Sprintf("Agent %s is %s.", label, done))
	})
	cmd.ValidArgsFunction = completeArgs(agentKind)
	w.register(cmd, until, limit)
	return cmd
}

func agentDeleteCommand(env Env) *cobra.Command {
	return agentOperation(env, "delete NAME|ID", "Delete an Agent (the worker tears it down; --wait waits for that)", "the Agent is gone",
		10*time.Minute, http.MethodDelete, "", "being deleted", "deleted",
		func(s *clientSession, id, label string, limit time.Duration) error {
			return s.waitGone("Agent "+label, agentPath(s, id), "occ agent get "+id, limit)
		})
}

func agentStopCommand(env Env) *cobra.Command {
	return agentOperation(env, "stop NAME|ID", "Stop an Agent's runtime (--wait waits until no revision is active)", "the Agent is stopped",
		10*time.Minute, http.MethodPost, "/stop", "stopping", "stopped",
		func(s *clientSession, id, label string, limit time.Duration) error {
			p := &poller{s: s, subject: "Agent " + label, followUp: "occ agent get " + id, limit: limit, idleAfter: unchangedAfter}
			return p.run(func() (observation, error) {
				var a agentView
				if err := s.getInto(agentPath(s, id), &a); err != nil {
					return observation{}, err
				}
				switch {
				case a.DesiredRuntimeState != platform.RuntimeStopped:
					return observation{state: "running", failure: fmt.Sprintf("Agent %s was deployed again while stopping.", label)}, nil
				case a.ActiveRevisionID == nil:
					return observation{state: "stopped", done: true}, nil
				}
				return observation{state: "stopping revision " + *a.ActiveRevisionID, idle: true}, nil
			})
		})
}

func agentDeployCommand(env Env) *cobra.Command {
	var w waitFlags
	cmd := simple(env, "deploy NAME|ID", "Admit a new revision and deploy it (--wait follows it to the end, waiting for a provisioning Namespace first)",
		cobra.ExactArgs(1), func(s *clientSession, args []string) error {
			if err := w.check(env); err != nil {
				return err
			}
			id, err := s.resolve(agentKind, args[0])
			if err != nil {
				return err
			}
			started := time.Now()
			data, err := s.call(http.MethodPost, agentPath(s, id)+"/deploy", nil)
			if w.wait && isAPIError(err, http.StatusConflict, codeNamespaceNotReady) {
				if err := s.waitForReadyNamespace(w.timeout, started); err != nil {
					return err
				}
				data, err = s.call(http.MethodPost, agentPath(s, id)+"/deploy", nil)
			}
			if err != nil {
				return s.fail(err)
			}
			var rev revisionView
			if err := decodeView(data, &rev); err != nil {
				return s.fail(err)
			}
			if !w.wait {
				return s.report(data, rev.ID, fmt.Sprintf("Revision %d (deployment %s) of Agent %s is queued. Follow it with: occ agent deployment-status %s %s",
					rev.Revision, rev.ID, refLabel(args[0], id), args[0], rev.ID))
			}
			return waitForDeployment(s, args[0], id, rev.ID, w.timeout, started)
		})
	cmd.ValidArgsFunction = completeArgs(agentKind)
	w.register(cmd, "the deployment succeeds or fails", 15*time.Minute)
	return cmd
}

// waitForReadyNamespace waits for the session's provisioning Namespace before a deploy, or says
// why it will never be ready.
func (s *clientSession) waitForReadyNamespace(limit time.Duration, started time.Time) error {
	var ns platform.Namespace
	if err := s.getInto("/namespaces/"+s.namespace, &ns); err != nil {
		return s.fail(err)
	}
	label := s.namespaceLabel()
	switch ns.Status {
	case platform.NamespaceProvisioning:
		fmt.Fprintf(s.progress(), "Namespace %s is provisioning; waiting for it before deploying.\n", label)
		return s.waitNamespaceReady(s.namespace, label, limit, started)
	case platform.NamespaceReady:
		return nil // it became ready meanwhile
	default:
		return requestError(s.env, "cannot deploy: the Namespace %s is %s and will not become ready.", label, ns.Status)
	}
}

// waitForDeployment polls the deployment, printing a line whenever its phase or last attempt
// changes, until it succeeds (exit 0) or fails (exit 1 with the error).
func waitForDeployment(s *clientSession, agentRef, agent, deployment string, limit time.Duration, started time.Time) error {
	var final json.RawMessage
	p := &poller{s: s, subject: "deployment " + deployment, limit: limit, idleAfter: unclaimedAfter, started: started,
		followUp: "occ agent deployment-status " + agentRef + " " + deployment}
	err := p.run(func() (observation, error) {
		data, err := s.call(http.MethodGet, agentPath(s, agent)+"/deployments/"+deployment, nil)
		if err != nil {
			return observation{}, err
		}
		var d deploymentView
		if err := decodeView(data, &d); err != nil {
			return observation{}, err
		}
		o := observation{state: d.line()}
		switch d.Status {
		case platform.DeploymentSucceeded:
			o.done, final = true, data
		case platform.DeploymentFailed:
			code, message := "", ""
			if d.Error != nil {
				code, message = d.Error.Code, d.Error.Message
			}
			o.failure = fmt.Sprintf("deployment %s failed: %s: %s", deployment, sanitize(code), sanitize(message))
		case platform.DeploymentQueued:
			o.idle = d.Progress == nil || d.Progress.LastAttempt == nil
		}
		return o, nil
	})
	if err != nil {
		return err
	}
	return s.report(final, deployment, fmt.Sprintf("Deployment %s succeeded after %s.", deployment, time.Since(started).Round(time.Second)))
}

func agentRevisionsCommand(env Env) *cobra.Command {
	cmd := simple(env, "revisions NAME|ID", "List an Agent's revisions with each deployment's status (* marks the active one)", cobra.ExactArgs(1),
		func(s *clientSession, args []string) error {
			id, err := s.resolve(agentKind, args[0])
			if err != nil {
				return err
			}
			data, err := s.listAll(agentPath(s, id) + "/revisions")
			if err != nil {
				return s.fail(err)
			}
			if !s.tabular() {
				return s.printListOf(data, tableSpec{})
			}
			var a agentView
			if err := s.getInto(agentPath(s, id), &a); err != nil {
				return s.fail(err)
			}
			items, err := decodeItems(data)
			if err != nil {
				return s.fail(err)
			}
			status := map[string]string{}
			for _, it := range items {
				rev := text(it["id"])
				var d deploymentView
				if err := s.getInto(agentPath(s, id)+"/deployments/"+rev, &d); err != nil {
					return s.fail(err)
				}
				status[rev] = d.Status
			}
			active := ""
			if a.ActiveRevisionID != nil {
				active = *a.ActiveRevisionID
			}
			return s.printItems(items, tableSpec{columns: []column{
				{"ACTIVE", func(item map[string]any) string {
					if active != "" && text(item["id"]) == active {
						return "*"
					}
					return " "
				}},
				col("ID", "id"), col("REVISION", "revision"),
				{"STATUS", func(item map[string]any) string { return status[text(item["id"])] }},
				col("CONFIGURATION", "configurationId"), col("GENERATION", "configurationGeneration"), col("CREATED", "createdAt"),
			}, wide: []column{
				{"HARNESS", func(item map[string]any) string {
					h, _ := item["harness"].(map[string]any)
					if h == nil {
						return ""
					}
					return text(h["id"]) + "@" + text(h["version"])
				}},
				{"COMPUTE", func(item map[string]any) string {
					c, _ := item["compute"].(map[string]any)
					return text(c["id"])
				}},
			}})
		})
	cmd.ValidArgsFunction = completeArgs(agentKind)
	return cmd
}

func agentDeploymentStatusCommand(env Env) *cobra.Command {
	var watch bool
	cmd := simple(env, "deployment-status NAME|ID [DEPLOYMENT_ID]", "Show a deployment's status (default: the latest revision)", cobra.RangeArgs(1, 2),
		func(s *clientSession, args []string) error {
			id, err := s.resolve(agentKind, args[0])
			if err != nil {
				return err
			}
			deployment := ""
			if len(args) == 2 {
				if err := checkID(env, args[1], platform.PrefixRevision, "deployment", "occ agent revisions "+args[0]); err != nil {
					return err
				}
				deployment = args[1]
			} else if deployment, err = latestRevision(s, args[0], id); err != nil {
				return err
			}
			path := agentPath(s, id) + "/deployments/" + deployment
			if watch {
				return s.watch(deploymentSpec, s.watchOne(path))
			}
			data, err := s.do(http.MethodGet, path, nil)
			if err != nil {
				return err
			}
			return s.printItemOf(data, deploymentSpec)
		})
	cmd.ValidArgsFunction = completeArgs(agentKind)
	watchFlag(cmd, &watch)
	return cmd
}

// latestRevision is the id of the Agent's highest-numbered revision.
func latestRevision(s *clientSession, agentRef, agent string) (string, error) {
	data, err := s.listAll(agentPath(s, agent) + "/revisions")
	if err != nil {
		return "", s.fail(err)
	}
	var revisions []revisionView
	if err := json.Unmarshal(data, &revisions); err != nil {
		return "", s.fail(errors.New("the API answered with an unexpected list"))
	}
	best := revisionView{Revision: -1}
	for _, r := range revisions {
		if r.Revision > best.Revision {
			best = r
		}
	}
	if best.ID == "" {
		return "", requestError(s.env, "the Agent %s has no revision yet. Deploy it with: occ agent deploy %s", sanitize(agentRef), sanitize(agentRef))
	}
	return best.ID, nil
}
