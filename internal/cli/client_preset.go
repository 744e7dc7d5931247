package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/spf13/cobra"

	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/preset"
)

// Client commands of Presets, and the Agent create that uses one. Upstream renders a Preset where
// the Agent is composed (its console), not on the server: so does the CLI, with the same rules
// (internal/preset), then creates the Secret, Configuration and Agent through the ordinary routes.

var presetSpec = tableSpec{columns: []column{col("ID", "id"), col("NAME", "name"), {"VARIABLES", func(item map[string]any) string {
	tpl, _ := item["template"].(map[string]any)
	vars, _ := tpl["variables"].(map[string]any)
	names := sortedKeys(vars)
	for i, n := range names {
		v, _ := vars[n].(map[string]any)
		names[i] = n + ":" + text(v["type"])
	}
	return strings.Join(names, ",")
}}, col("CREATED", "createdAt")}}

func presetPath(s *clientSession, id string) string { return nsPath(s, "/presets/"+id) }

func newPresetCommand(env Env) *cobra.Command {
	group, _ := clientGroup("preset", "Create, list, show, update and delete Presets (reusable Agent launch settings)")
	group.AddCommand(
		listCommand(env, "List the Presets you may read", presetSpec, true, func(s *clientSession) string { return nsPath(s, "/presets") }),
		getCommand(env, presetKind, presetSpec, true, presetPath),
		fileCommand(env, "create -f FILE", "Create a Preset from {name, template}", 0, nil,
			func(s *clientSession, _ []string, body []byte) error {
				data, err := s.do(http.MethodPost, nsPath(s, "/presets"), body)
				if err != nil {
					return err
				}
				return s.printItemOf(data, presetSpec)
			}),
		fileCommand(env, "update NAME|ID -f FILE", "Rename a Preset or replace its whole template from {name?, template?}", 1, nil,
			func(s *clientSession, args []string, body []byte) error {
				id, err := s.resolve(presetKind, args[0])
				if err != nil {
					return err
				}
				data, err := s.do(http.MethodPatch, presetPath(s, id), body)
				if err != nil {
					return err
				}
				return s.printItemOf(data, presetSpec)
			}),
		deleteCommand(env, presetKind, "preset", presetPath),
	)
	return group
}

// presetFlags select a Preset for agent create and fill its variables.
type presetFlags struct {
	name     string
	set      []string
	setFiles []string
}

func (p *presetFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&p.name, "preset", "", "create the Configuration and the Agent from this Preset (name or id)")
	cmd.Flags().StringArrayVar(&p.set, "set", nil, "a Preset variable, NAME=VALUE (repeatable; a password here is visible in the shell history)")
	cmd.Flags().StringArrayVar(&p.setFiles, "set-file", nil, "a Preset variable read from a file, NAME=PATH (repeatable; one trailing newline is dropped)")
	completeFlag(cmd, "preset", presetKind)
}

func (p *presetFlags) given() bool { return p.name != "" || len(p.set) > 0 || len(p.setFiles) > 0 }

// inputs reads --set and --set-file into typed inputs of the template.
func (p *presetFlags) inputs(env Env, tpl *preset.Template) (map[string]any, error) {
	out := map[string]any{}
	add := func(flag, pair string, read func(string) (string, error)) error {
		name, value, ok := strings.Cut(pair, "=")
		if !ok || name == "" {
			return usageError(env, "--%s takes NAME=%s.", flag, map[bool]string{true: "PATH", false: "VALUE"}[flag == "set-file"])
		}
		if _, dup := out[name]; dup {
			return usageError(env, "the variable %s is given twice.", name)
		}
		value, err := read(value)
		if err != nil {
			return err
		}
		v, err := tpl.Input(name, value)
		if err != nil {
			return usageError(env, "%v", err)
		}
		out[name] = v
		return nil
	}
	for _, pair := range p.set {
		if err := add("set", pair, func(v string) (string, error) { return v, nil }); err != nil {
			return nil, err
		}
	}
	for _, pair := range p.setFiles {
		if err := add("set-file", pair, func(path string) (string, error) {
			data, _, err := readInput(env, path, preset.MaxBytes)
			if err != nil {
				return "", usageError(env, "--set-file: %v.", err)
			}
			data = bytes.TrimSuffix(bytes.TrimSuffix(data, []byte("\n")), []byte("\r"))
			return string(data), nil
		}); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// createFromPreset renders the Preset and creates what the rendering describes: a Secret for a
// password given as the harness secret, the Configuration, then the Agent. name (when given)
// replaces the template's Agent name and fills an unset "name" variable. Returns the Agent.
func (p *presetFlags) createFromPreset(s *clientSession, name, mode string, auth *harnessAuthFlags) (json.RawMessage, error) {
	env := s.env
	id, err := s.resolve(presetKind, p.name)
	if err != nil {
		return nil, err
	}
	var stored struct {
		Template json.RawMessage `json:"template"`
	}
	if err := s.getInto(presetPath(s, id), &stored); err != nil {
		return nil, s.fail(err)
	}
	tpl, err := preset.Parse(stored.Template)
	if err != nil {
		return nil, usageError(env, "%v", err)
	}
	inputs, err := p.inputs(env, tpl)
	if err != nil {
		return nil, err
	}
	if v, declared := tpl.Variables["name"]; declared && name != "" && v.Type == preset.TypeString {
		if _, set := inputs["name"]; !set {
			inputs["name"] = name
		}
	}
	rendered, err := tpl.Render(inputs)
	if err != nil {
		return nil, usageError(env, "%v", err)
	}
	agent := rendered.Agent
	if agent == nil {
		agent = map[string]any{}
	}
	if name != "" {
		agent["name"] = name
	}
	agentName, _ := agent["name"].(string)
	if err := checkName(env, agentName); err != nil {
		return nil, usageError(env, "give the Agent's NAME: the Preset names none (or its --set name is invalid).")
	}
	if mode != "" {
		agent["executionMode"] = mode
	}
	if auth.given() {
		ha, err := auth.build(s)
		if err != nil {
			return nil, err
		}
		agent["harnessAuth"] = ha
	}
	if ha, ok := agent["harnessAuth"].(map[string]any); ok {
		if secret, has := ha["secret"]; has {
			value, _ := secret.(string)
			if value == "" {
				return nil, usageError(env, "the Preset's harness secret is empty: give it with --set-file NAME=PATH.")
			}
			body, _ := json.Marshal(map[string]string{"name": agentName + "-harness", "value": value})
			data, err := s.do(http.MethodPost, nsPath(s, "/secrets"), body)
			if err != nil {
				return nil, err
			}
			var sec struct {
				ID string `json:"id"`
			}
			if err := decodeView(data, &sec); err != nil {
				return nil, err
			}
			delete(ha, "secret")
			ha["source"] = platform.Ref{Kind: platform.RefKindSecret, NamespaceID: s.namespace, ID: sec.ID}
			fmt.Fprintf(env.Stderr, "Created the Secret %s-harness (%s) for the Agent's Harness authentication.\n", agentName, sec.ID)
		}
	}
	cfgBody := map[string]any{"kind": "agent", "values": map[string]any{}}
	if rendered.Configuration != nil {
		if v, ok := rendered.Configuration["values"]; ok {
			cfgBody["values"] = v
		}
		if b, ok := rendered.Configuration["secretBindings"]; ok {
			cfgBody["secretBindings"] = b
		}
	}
	body, _ := json.Marshal(cfgBody)
	data, err := s.do(http.MethodPost, nsPath(s, "/configurations"), body)
	if err != nil {
		return nil, err
	}
	var cfg struct {
		ID string `json:"id"`
	}
	if err := decodeView(data, &cfg); err != nil {
		return nil, err
	}
	agent["configurationId"] = cfg.ID
	body, _ = json.Marshal(agent)
	data, err = s.do(http.MethodPost, nsPath(s, "/agents"), body)
	if err != nil {
		// The Configuration stays for a retry with the ordinary create, as upstream's partial save.
		fmt.Fprintf(env.Stderr, "The Configuration %s was created; retry with: occ agent create %s --configuration %s (or delete it with occ configuration delete %s).\n",
			cfg.ID, quoteIfNeeded(agentName), cfg.ID, cfg.ID)
		return nil, err
	}
	return data, nil
}
