package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/spf13/cobra"
)

// Waits (--wait) and watches (--watch) poll the API. A wait prints a line whenever the state
// changes, a heartbeat while it does not, and one warning when nothing suggests that a worker has
// taken the work up; Ctrl-C and --wait-timeout end the wait (the operation continues) with the
// command that follows it later.

const (
	pollInterval      = time.Second
	heartbeatInterval = 15 * time.Second
	// A deployment still queued without any attempt after this long has not been claimed.
	unclaimedAfter = 5 * time.Second
	// Namespaces and Agent stops show no claim: a state that has not changed for this long gets
	// the same warning, worded as a question.
	unchangedAfter = 10 * time.Second
	watchInterval  = 2 * time.Second
)

// waitFlags are --wait and --wait-timeout.
type waitFlags struct {
	wait    bool
	timeout time.Duration
}

func (w *waitFlags) register(cmd *cobra.Command, until string, def time.Duration) {
	cmd.Flags().BoolVar(&w.wait, "wait", false, "wait until "+until+", printing the progress")
	cmd.Flags().DurationVar(&w.timeout, "wait-timeout", def, "give up waiting after this long (the operation continues)")
}

func (w *waitFlags) check(env Env) error {
	if w.wait && w.timeout <= 0 {
		return usageError(env, "--wait-timeout must be positive.")
	}
	return nil
}

// observation is one poll of a wait.
type observation struct {
	// state is the line printed when it changes ("provisioning", "running · last attempt …").
	state string
	// done ends the wait successfully.
	done bool
	// failure ends the wait with exit status 1; it is printed as is.
	failure string
	// idle says nothing shows a worker's hand yet.
	idle bool
}

// poller follows one operation until poll says it is done or failed.
type poller struct {
	s *clientSession
	// subject names what is waited for in messages ("Namespace team-a").
	subject string
	// followUp is the command that shows the state later.
	followUp string
	limit    time.Duration
	// idleAfter is how long idle observations last before the no-worker warning; 0 never warns.
	idleAfter time.Duration
	started   time.Time
}

// progress is where waits print their progress: stdout for tables, stderr when stdout carries a
// machine-readable result.
func (s *clientSession) progress() io.Writer {
	if s.tabular() {
		return s.env.Stdout
	}
	return s.env.Stderr
}

// run polls every second. Server errors (5xx) while polling are retried; other errors end the
// wait.
func (p *poller) run(poll func() (observation, error)) error {
	s := p.s
	if p.started.IsZero() {
		p.started = time.Now()
	}
	ctx := s.cmd.Context()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	out := s.progress()
	last, lastPrinted, warned := "", time.Now(), false
	idleSince := time.Time{}
	for {
		o, err := poll()
		switch {
		case err != nil && ctx.Err() != nil:
			// Ctrl-C while a poll was in flight (the likeliest moment): the same as between polls.
			return p.stopped()
		case err != nil && isServerError(err):
			// keep waiting: the next poll may succeed
		case err != nil:
			return s.fail(err)
		default:
			if o.state != last {
				fmt.Fprintf(out, "%s  %s\n", formatElapsed(time.Since(p.started)), sanitize(o.state))
				last, lastPrinted = o.state, time.Now()
			} else if time.Since(lastPrinted) >= heartbeatInterval {
				fmt.Fprintf(out, "%s  still %s\n", formatElapsed(time.Since(p.started)), sanitize(o.state))
				lastPrinted = time.Now()
			}
			if o.idle {
				if idleSince.IsZero() {
					idleSince = time.Now()
				}
				if !warned && p.idleAfter > 0 && time.Since(idleSince) >= p.idleAfter {
					fmt.Fprintf(s.env.Stderr, "Warning: %s: no worker has acted on it after %s. Is occ worker running? (occ dev runs one.)\n",
						p.subject, p.idleAfter)
					warned = true
				}
			} else {
				idleSince = time.Time{}
			}
			if o.done {
				return nil
			}
			if o.failure != "" {
				fmt.Fprintln(s.env.Stderr, "Error: "+o.failure)
				return exitError{Code: exitRequestFailed}
			}
		}
		if time.Since(p.started) > p.limit {
			fmt.Fprintf(s.env.Stderr, "Error: %s did not finish within %s; it continues. Follow it with: %s\n", p.subject, p.limit, p.followUp)
			return exitError{Code: exitRequestFailed}
		}
		select {
		case <-ctx.Done():
			return p.stopped()
		case <-tick.C:
		}
	}
}

// stopped ends a wait that the user interrupted, naming the command that follows the operation.
func (p *poller) stopped() error {
	fmt.Fprintf(p.s.env.Stderr, "Stopped waiting; %s continues. Follow it with: %s\n", p.subject, p.followUp)
	return exitError{Code: exitRequestFailed}
}

func isServerError(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.Status >= 500
}

func formatElapsed(d time.Duration) string {
	d = d.Round(time.Second)
	return fmt.Sprintf("[%02d:%02d]", int(d.Minutes()), int(d.Seconds())%60)
}

// --- watch --------------------------------------------------------------------------------------

// watchFlag is --watch (-w) of get and list.
func watchFlag(cmd *cobra.Command, w *bool) {
	cmd.Flags().BoolVarP(w, "watch", "w", false, "after printing, poll every 2 s and print each resource again when it changes (Ctrl-C ends)")
}

// watch prints the items of fetch, then polls and prints every item whose rendering changed (a
// table prints its header once). An item that disappears is reported once on stderr. Ctrl-C ends
// the watch with exit status 0.
func (s *clientSession) watch(t tableSpec, fetch func() ([]json.RawMessage, error)) error {
	ctx := s.cmd.Context()
	seen := map[string]string{}
	first := true
	for {
		raws, err := fetch()
		switch {
		case err != nil && ctx.Err() != nil:
			return nil // Ctrl-C while a fetch was in flight
		case err != nil && isServerError(err):
		case err != nil:
			return s.fail(err)
		default:
			present := map[string]bool{}
			var changed []map[string]any
			var changedRaw []json.RawMessage
			for _, raw := range raws {
				item, err := decodeItem(raw)
				if err != nil {
					return s.fail(err)
				}
				id := t.id(item)
				present[id] = true
				if seen[id] != string(raw) {
					seen[id] = string(raw)
					changed = append(changed, item)
					changedRaw = append(changedRaw, raw)
				}
			}
			for id := range seen {
				if !present[id] {
					fmt.Fprintf(s.env.Stderr, "%s is gone.\n", sanitize(id))
					delete(seen, id)
				}
			}
			if err := s.printWatched(t, changed, changedRaw, first); err != nil {
				return err
			}
			first = false
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(watchInterval):
		}
	}
}

// printWatched prints one round of a watch: structured items one document each, table rows
// without repeating the header.
func (s *clientSession) printWatched(t tableSpec, items []map[string]any, raws []json.RawMessage, first bool) error {
	switch {
	case s.structured():
		for _, raw := range raws {
			if s.output == outputYAML {
				fmt.Fprintln(s.env.Stdout, "---")
			}
			if err := s.printStructured(raw); err != nil {
				return err
			}
		}
		return nil
	case s.output == outputName:
		return s.printItems(items, t)
	}
	if len(items) == 0 {
		if first {
			fmt.Fprintln(s.env.Stdout, "No resources found.")
		}
		return nil
	}
	headers := s.noHeaders
	s.noHeaders = headers || !first
	s.printTable(items, s.columnsOf(t))
	s.noHeaders = headers
	return nil
}

// watchOne adapts a single GET for watch; a 404 after the first round ends the item.
func (s *clientSession) watchOne(path string) func() ([]json.RawMessage, error) {
	found := false
	return func() ([]json.RawMessage, error) {
		data, err := s.call(http.MethodGet, path, nil)
		if found && isAPIError(err, http.StatusNotFound, "") {
			return nil, nil
		}
		found = found || err == nil
		if err != nil {
			return nil, err
		}
		return []json.RawMessage{data}, nil
	}
}

// watchList adapts a list route for watch.
func (s *clientSession) watchList(path string) func() ([]json.RawMessage, error) {
	return func() ([]json.RawMessage, error) {
		data, err := s.listAll(path)
		if err != nil {
			return nil, err
		}
		var items []json.RawMessage
		if err := json.Unmarshal(data, &items); err != nil {
			return nil, err
		}
		return items, nil
	}
}
