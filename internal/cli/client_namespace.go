package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/openclaw/occ/internal/platform"
)

// Client commands of the Installation and its Namespaces.

var (
	installationColumns = []column{col("ID", "id"), col("NAME", "name"), col("CREATED", "createdAt")}
	namespaceColumns    = []column{col("ID", "id"), col("NAME", "name"), col("STATUS", "status"),
		col("EXISTING NAMESPACE", "existingNamespace"), col("CREATED", "createdAt")}
	namespaceSpec = tableSpec{columns: namespaceColumns}
)

// refLabel names a resource in messages: "team-a (ns_…)" when it was given by name, else the id.
func refLabel(ref, id string) string {
	if ref != "" && ref != id {
		return sanitize(ref) + " (" + id + ")"
	}
	return id
}

func newInstallationCommand(env Env) *cobra.Command {
	group, _ := clientGroup("installation", "Show the Installation")
	group.AddCommand(&cobra.Command{
		Use: "get", Short: "Show the Installation", Args: cobra.NoArgs,
		RunE: clientRun(env, false, func(s *clientSession, _ []string) error {
			data, err := s.do(http.MethodGet, "/installation", nil)
			if err != nil {
				return err
			}
			return s.printItem(data, installationColumns)
		}),
	}, deploymentInventoryCommand(env))
	return group
}

// inventoryColumns are the table of occ installation deployment-inventory: one row per Agent.
var inventoryColumns = []column{col("NAMESPACE", "namespaceId"), col("AGENT", "id"), col("NAME", "name"),
	col("MODE", "executionMode"), col("DESIRED", "desiredRuntimeState"), col("REVISION", "revision"),
	col("HARNESS", "harness"), col("COMPUTE", "compute"), col("IN PROGRESS", "deploymentInProgress")}

// deploymentInventoryCommand prints every Agent of the Installation with its active revision
// (installation:administer); -o json prints the API's document.
func deploymentInventoryCommand(env Env) *cobra.Command {
	var cursor string
	var limit int
	c := &cobra.Command{
		Use:   "deployment-inventory [--limit N] [--cursor C]",
		Short: "List every Agent with its active revision's Harness and Compute (needs installation:administer)",
		Args:  cobra.NoArgs,
		RunE: clientRun(env, false, func(s *clientSession, _ []string) error {
			q := url.Values{}
			if limit != 0 {
				if limit < 1 || limit > 500 {
					return usageError(env, "--limit must be from 1 to 500.")
				}
				q.Set("limit", strconv.Itoa(limit))
			}
			if cursor != "" {
				q.Set("cursor", cursor)
			}
			path := "/installation/deployment-inventory"
			if len(q) > 0 {
				path += "?" + q.Encode()
			}
			p, err := s.send(http.MethodGet, path, nil)
			if err != nil {
				return s.fail(err)
			}
			if s.structured() {
				if err := s.printStructured(p.Data); err != nil {
					return err
				}
			} else if err := s.printInventory(p.Data); err != nil {
				return err
			}
			if next := p.Meta.NextCursor; next != nil && *next != "" {
				fmt.Fprintf(s.env.Stderr, "More Agents: occ installation deployment-inventory --limit %d --cursor %s\n", limit, *next)
			}
			return nil
		}),
	}
	c.Flags().IntVar(&limit, "limit", 0, "Agents per page (1 to 500; default: all)")
	c.Flags().StringVar(&cursor, "cursor", "", "continue after the previous page (the command it printed)")
	return c
}

// printInventory flattens the inventory into one row per Agent.
func (s *clientSession) printInventory(data json.RawMessage) error {
	var inv struct {
		Namespaces []struct {
			ID     string           `json:"id"`
			Agents []map[string]any `json:"agents"`
		} `json:"namespaces"`
	}
	if err := json.Unmarshal(data, &inv); err != nil {
		return s.fail(errors.New("the API answered with an unexpected inventory"))
	}
	var rows []map[string]any
	for _, ns := range inv.Namespaces {
		for _, a := range ns.Agents {
			row := map[string]any{"namespaceId": ns.ID, "id": a["id"], "name": a["name"], "executionMode": a["executionMode"],
				"desiredRuntimeState": a["desiredRuntimeState"], "deploymentInProgress": fmt.Sprint(a["deploymentInProgress"])}
			if rev, ok := a["activeRevision"].(map[string]any); ok {
				row["revision"] = fmt.Sprint(rev["revision"])
				if h, ok := rev["harness"].(map[string]any); ok {
					row["harness"] = text(h["id"]) + "@" + text(h["version"])
				}
				if c, ok := rev["compute"].(map[string]any); ok {
					row["compute"] = text(c["id"]) + " (" + text(c["implementation"]) + ")"
				}
			}
			rows = append(rows, row)
		}
	}
	return s.printItems(rows, tableSpec{columns: inventoryColumns})
}

var dnsLabel = regexp.MustCompile(platform.DNSLabelPattern)

func newNamespaceCommand(env Env) *cobra.Command {
	group, _ := clientGroup("namespace", "List, show, create and delete Namespaces")
	group.Aliases = []string{"ns"}
	namespacePath := func(_ *clientSession, id string) string { return "/namespaces/" + id }
	group.AddCommand(
		listCommand(env, "List the Namespaces you may read", namespaceSpec, false, func(*clientSession) string { return "/namespaces" }),
		getCommand(env, namespaceKind, namespaceSpec, false, namespacePath),
		namespaceCreateCommand(env),
		namespaceDeleteCommand(env),
	)
	return group
}

func namespaceCreateCommand(env Env) *cobra.Command {
	var existing string
	var w waitFlags
	cmd := &cobra.Command{
		Use: "create NAME", Short: "Create a Namespace (the worker makes it ready; --wait waits for that)", Args: cobra.ExactArgs(1),
		RunE: clientRun(env, false, func(s *clientSession, args []string) error {
			if err := w.check(env); err != nil {
				return err
			}
			if err := checkName(env, args[0]); err != nil {
				return err
			}
			body := map[string]string{"name": args[0]}
			if s.cmd.Flags().Changed("existing-namespace") {
				if !dnsLabel.MatchString(existing) {
					return usageError(env, "--existing-namespace must be a Kubernetes namespace name (DNS-1123 label, at most 63 characters).")
				}
				body["existingNamespace"] = existing
			}
			raw, _ := json.Marshal(body)
			data, err := s.do(http.MethodPost, "/namespaces", raw)
			if err != nil {
				return err
			}
			if !w.wait {
				return s.printItemOf(data, namespaceSpec)
			}
			var ns platform.Namespace
			if err := decodeView(data, &ns); err != nil {
				return s.fail(err)
			}
			if err := s.waitNamespaceReady(ns.ID, refLabel(args[0], ns.ID), w.timeout, time.Now()); err != nil {
				return err
			}
			data, err = s.do(http.MethodGet, "/namespaces/"+ns.ID, nil)
			if err != nil {
				return err
			}
			return s.printItemOf(data, namespaceSpec)
		}),
	}
	cmd.Flags().StringVar(&existing, "existing-namespace", "", "adopt this existing Kubernetes namespace (needs installation:administer)")
	w.register(cmd, "the Namespace is ready", 5*time.Minute)
	return cmd
}

// waitNamespaceReady follows a provisioning Namespace until it is ready (exit 0) or failed or
// deleting (exit 1).
func (s *clientSession) waitNamespaceReady(id, label string, limit time.Duration, started time.Time) error {
	p := &poller{s: s, subject: "Namespace " + label, followUp: "occ namespace get " + id, limit: limit,
		idleAfter: unchangedAfter, started: started}
	return p.run(func() (observation, error) {
		var ns platform.Namespace
		if err := s.getInto("/namespaces/"+id, &ns); err != nil {
			return observation{}, err
		}
		o := observation{state: ns.Status}
		switch ns.Status {
		case platform.NamespaceReady:
			o.done = true
		case platform.NamespaceFailed:
			o.failure = fmt.Sprintf("Namespace %s failed to provision (status failed); the worker's log says why.", label)
		case platform.NamespaceDeleting:
			o.failure = fmt.Sprintf("Namespace %s is being deleted.", label)
		default:
			o.idle = true
		}
		return o, nil
	})
}

func namespaceDeleteCommand(env Env) *cobra.Command {
	var yes bool
	var w waitFlags
	cmd := &cobra.Command{
		Use: "delete NAME|ID", Short: "Delete an empty Namespace (asks first; the worker tears it down)", Args: cobra.ExactArgs(1),
		ValidArgsFunction: completeArgs(namespaceKind),
		RunE: clientRun(env, false, func(s *clientSession, args []string) error {
			if err := w.check(env); err != nil {
				return err
			}
			id, err := s.resolve(namespaceKind, args[0])
			if err != nil {
				return err
			}
			label := refLabel(args[0], id)
			if err := confirm(env, yes, fmt.Sprintf("Delete the Namespace %s? What its Compute Driver made for it is torn down and its name stays reserved.", label)); err != nil {
				return err
			}
			data, err := s.do(http.MethodDelete, "/namespaces/"+id, nil)
			if err != nil {
				return err
			}
			if w.wait {
				if err := s.waitGone("Namespace "+label, "/namespaces/"+id, "occ namespace get "+id, w.timeout); err != nil {
					return err
				}
				return s.report(data, id, fmt.Sprintf("Namespace %s is deleted.", label))
			}
			return s.report(data, id, fmt.Sprintf("Namespace %s is being deleted.", label))
		}),
	}
	yesFlag(cmd, &yes)
	w.register(cmd, "the Namespace is gone", 5*time.Minute)
	return cmd
}

// waitGone polls path until it answers 404.
func (s *clientSession) waitGone(subject, path, followUp string, limit time.Duration) error {
	p := &poller{s: s, subject: subject, followUp: followUp, limit: limit, idleAfter: unchangedAfter}
	return p.run(func() (observation, error) {
		var view struct {
			Status string `json:"status"`
		}
		err := s.getInto(path, &view)
		if isAPIError(err, http.StatusNotFound, "") {
			return observation{state: "gone", done: true}, nil
		}
		if err != nil {
			return observation{}, err
		}
		return observation{state: view.Status, idle: true}, nil
	})
}
