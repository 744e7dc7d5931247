// Package preset holds the rules of Agent Presets: the structure of a template, its typed
// variables and the one-pass rendering of {{ vars.name }} tokens, plus the Presets this build
// ships. It knows nothing of HTTP or storage: the API checks templates with it before storing
// them, and the CLI renders a Preset it read before creating the Agent.
package preset
