package cli

import (
	"encoding/json"
	"net/http"
	"net/url"
	"sort"

	"github.com/spf13/cobra"

	"github.com/openclaw/occ/internal/platform"
)

// Builders shared by the client command groups (one file per group: client_namespace.go,
// client_iam.go, client_agent.go, …).

// clientRun wraps a client command's body: it resolves the session first.
func clientRun(env Env, needNamespace bool, body func(s *clientSession, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		s, err := newClientSession(env, cmd, needNamespace)
		if err != nil {
			return err
		}
		return body(s, args)
	}
}

// simple builds a leaf command that needs the Namespace.
func simple(env Env, use, short string, args cobra.PositionalArgs, body func(s *clientSession, args []string) error) *cobra.Command {
	return &cobra.Command{Use: use, Short: short, Args: args, RunE: clientRun(env, true, body)}
}

func pathEscape(id string) string { return url.PathEscape(id) }

// fileFlag is --file (-f): a JSON or YAML document, - for standard input.
func fileFlag(cmd *cobra.Command, file *string, what string) {
	cmd.Flags().StringVarP(file, "file", "f", "", what+": a JSON or YAML file, - for standard input")
}

// listCommand is `list` of a collection with --watch; a Namespace-owned collection also takes
// --all-namespaces (-A), which lists every Namespace you may read and adds a NAMESPACE column.
func listCommand(env Env, short string, spec tableSpec, namespaced bool, path func(s *clientSession) string) *cobra.Command {
	var watch, all bool
	cmd := &cobra.Command{Use: "list", Short: short, Args: cobra.NoArgs, Aliases: []string{"ls"}}
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		s, err := newClientSession(env, cmd, namespaced && !all)
		if err != nil {
			return err
		}
		shown := spec
		fetch := s.watchList(path(s))
		if all {
			names, err := s.namespaceNames()
			if err != nil {
				return s.fail(err)
			}
			shown.columns = append([]column{{"NAMESPACE", func(item map[string]any) string {
				return names[text(item["namespaceId"])]
			}}}, spec.columns...)
			fetch = func() ([]json.RawMessage, error) { return s.acrossNamespaces(names, path) }
		}
		if watch {
			return s.watch(shown, fetch)
		}
		items, err := fetch()
		if err != nil {
			return s.fail(err)
		}
		if items == nil {
			items = []json.RawMessage{}
		}
		data, _ := json.Marshal(items)
		return s.printListOf(data, shown)
	}
	watchFlag(cmd, &watch)
	if namespaced {
		cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "list in every Namespace you may read")
	}
	return cmd
}

// namespaceNames maps the id of every readable Namespace to its name.
func (s *clientSession) namespaceNames() (map[string]string, error) {
	data, err := s.listAll("/namespaces")
	if err != nil {
		return nil, err
	}
	var items []struct{ ID, Name string }
	if err := json.Unmarshal(data, &items); err != nil {
		return nil, err
	}
	names := make(map[string]string, len(items))
	for _, it := range items {
		names[it.ID] = it.Name
	}
	return names, nil
}

// acrossNamespaces lists path in every Namespace of names, in name order.
func (s *clientSession) acrossNamespaces(names map[string]string, path func(s *clientSession) string) ([]json.RawMessage, error) {
	ids := make([]string, 0, len(names))
	for id := range names {
		ids = append(ids, id)
	}
	sortBy(ids, func(id string) string { return names[id] + "\x00" + id })
	saved := s.namespace
	defer func() { s.namespace = saved }()
	var all []json.RawMessage
	for _, id := range ids {
		s.namespace = id
		data, err := s.listAll(path(s))
		if err != nil {
			return nil, err
		}
		var items []json.RawMessage
		if err := json.Unmarshal(data, &items); err != nil {
			return nil, err
		}
		all = append(all, items...)
	}
	return all, nil
}

// getCommand is `get NAME|ID` of one resource, with --watch.
func getCommand(env Env, kind resourceKind, spec tableSpec, namespaced bool, path func(s *clientSession, id string) string) *cobra.Command {
	var watch bool
	cmd := &cobra.Command{Use: "get " + refUse(kind), Short: "Show one " + kind.what, Args: cobra.ExactArgs(1),
		ValidArgsFunction: completeArgs(kind)}
	cmd.RunE = clientRun(env, namespaced, func(s *clientSession, args []string) error {
		id, err := s.resolve(kind, args[0])
		if err != nil {
			return err
		}
		if watch {
			return s.watch(spec, s.watchOne(path(s, id)))
		}
		data, err := s.do(http.MethodGet, path(s, id), nil)
		if err != nil {
			return err
		}
		return s.printItemOf(data, spec)
	})
	watchFlag(cmd, &watch)
	return cmd
}

// deleteCommand is `delete NAME|ID` of a resource removed at once (204).
func deleteCommand(env Env, kind resourceKind, label string, path func(s *clientSession, id string) string) *cobra.Command {
	return &cobra.Command{Use: "delete " + refUse(kind), Short: "Delete " + article(kind.what) + " " + kind.what, Args: cobra.ExactArgs(1),
		ValidArgsFunction: completeArgs(kind),
		RunE: clientRun(env, true, func(s *clientSession, args []string) error {
			id, err := s.resolve(kind, args[0])
			if err != nil {
				return err
			}
			if _, err := s.do(http.MethodDelete, path(s, id), nil); err != nil {
				return err
			}
			return s.printDeleted(label, id)
		})}
}

// refUse is how a command's usage names its argument: NAME|ID when names are looked up.
func refUse(kind resourceKind) string {
	if kind.named && kind.collection != nil {
		return "NAME|ID"
	}
	return "ID"
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
				return usageError(env, "%s: %v", fileLabel(file), err)
			}
		}
		return send(s, args, body)
	})
	fileFlag(cmd, &file, "the resource")
	return cmd
}

// documentOrFlags is the request body of a command that takes -f FILE or flags: the document when
// file is set (refused when flagsGiven too), else what build makes of the arguments and flags.
func documentOrFlags(env Env, file string, flagsGiven bool, build func() ([]byte, error)) ([]byte, error) {
	if file == "" {
		return build()
	}
	if flagsGiven {
		return nil, usageError(env, "-f FILE carries the whole request: give it alone, without a NAME or the other flags.")
	}
	return readJSONFile(env, file)
}

// checkName refuses a name the API would refuse.
func checkName(env Env, name string) error {
	if platform.ValidName(name) {
		return nil
	}
	return usageError(env, "%s is not a valid name: 1 to 200 characters, no outer whitespace, no control characters.", quoteIfNeeded(name))
}

func fileLabel(path string) string {
	if path == "-" {
		return stdinName
	}
	return path
}

// sortBy sorts ids by key.
func sortBy(ids []string, key func(string) string) {
	sort.Slice(ids, func(i, j int) bool { return key(ids[i]) < key(ids[j]) })
}
