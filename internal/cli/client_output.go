package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"
	"unicode/utf8"

	"sigs.k8s.io/yaml"
)

// Output formats of the client commands (-o).
const (
	outputTable = "table"
	outputWide  = "wide"
	outputName  = "name"
	outputJSON  = "json"
	outputYAML  = "yaml"
)

var outputFormats = []string{outputTable, outputWide, outputName, outputJSON, outputYAML}

func validOutput(o string) bool {
	for _, f := range outputFormats {
		if o == f {
			return true
		}
	}
	return false
}

// tabular reports a table format (table or wide).
func (s *clientSession) tabular() bool { return s.output == outputTable || s.output == outputWide }

// structured reports json or yaml.
func (s *clientSession) structured() bool { return s.output == outputJSON || s.output == outputYAML }

// column is one table column: a header and the cell of an item.
type column struct {
	header string
	cell   func(item map[string]any) string
}

// tableSpec is how a resource prints: its columns, the extra columns of -o wide, and the field -o
// name prints (default id).
type tableSpec struct {
	columns []column
	wide    []column
	idField string
}

func (t tableSpec) id(item map[string]any) string {
	if t.idField != "" {
		return text(item[t.idField])
	}
	return text(item["id"])
}

func (s *clientSession) columnsOf(t tableSpec) []column {
	if s.output == outputWide {
		return append(append([]column(nil), t.columns...), t.wide...)
	}
	return t.columns
}

func field(name string) func(map[string]any) string {
	return func(item map[string]any) string { return text(item[name]) }
}

func col(header, name string) column { return column{header, field(name)} }

// text renders a JSON value for a table cell.
func text(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case json.Number:
		return x.String()
	case bool:
		return strconv.FormatBool(x)
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// article is "a" or "an" for a resource kind in a sentence ("an Agent", "a Role").
func article(kind string) string {
	if kind != "" && strings.ContainsRune("AEIOUaeiou", rune(kind[0])) {
		return "an"
	}
	return "a"
}

// unsafeRune reports characters a terminal must not receive raw: controls, bidi controls and
// line or paragraph separators.
func unsafeRune(r rune) bool {
	switch {
	case r < 0x20, r >= 0x7f && r <= 0x9f, r == 0x2028, r == 0x2029, r == 0x061c, r == 0x200e, r == 0x200f,
		r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == utf8.RuneError:
		return true
	}
	return false
}

// sanitize quotes and escapes a value that holds unsafe characters.
func sanitize(s string) string {
	if !utf8.ValidString(s) || strings.IndexFunc(s, unsafeRune) >= 0 {
		var b strings.Builder
		b.WriteByte('"')
		for i, r := range s {
			switch {
			case r == utf8.RuneError && !utf8.ValidString(s[i:i+1]):
				fmt.Fprintf(&b, `\x%02x`, s[i])
			case unsafeRune(r):
				if r < 0x80 {
					fmt.Fprintf(&b, `\x%02x`, r)
				} else {
					fmt.Fprintf(&b, `\u%04x`, r)
				}
			case r == '"' || r == '\\':
				b.WriteByte('\\')
				b.WriteRune(r)
			default:
				b.WriteRune(r)
			}
		}
		b.WriteByte('"')
		return b.String()
	}
	return s
}

// quoteIfNeeded is sanitize for values echoed in messages; blank values are shown quoted.
func quoteIfNeeded(s string) string {
	if s == "" || strings.IndexFunc(s, unicode.IsSpace) >= 0 {
		return strconv.Quote(s)
	}
	return sanitize(s)
}

func decodeItems(data json.RawMessage) ([]map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var items []map[string]any
	if err := dec.Decode(&items); err != nil {
		return nil, errors.New("the API answered with an unexpected list")
	}
	return items, nil
}

func decodeItem(data json.RawMessage) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var item map[string]any
	if err := dec.Decode(&item); err != nil || item == nil {
		return nil, errors.New("the API answered with an unexpected resource")
	}
	return item, nil
}

// printStructured prints data bare, as indented JSON or as YAML.
func (s *clientSession) printStructured(data json.RawMessage) error {
	switch s.output {
	case outputJSON:
		var b bytes.Buffer
		if err := json.Indent(&b, data, "", "  "); err != nil {
			return s.fail(errors.New("the API answered with invalid JSON"))
		}
		b.WriteByte('\n')
		_, err := s.env.Stdout.Write(b.Bytes())
		return err
	default:
		y, err := yaml.JSONToYAML(data)
		if err != nil {
			return s.fail(errors.New("the API answered with invalid JSON"))
		}
		_, err = s.env.Stdout.Write(y)
		return err
	}
}

// printTable prints items under cols; --no-headers drops the header line.
func (s *clientSession) printTable(items []map[string]any, cols []column) {
	w := tabwriter.NewWriter(s.env.Stdout, 0, 0, 3, ' ', 0)
	if !s.noHeaders {
		headers := make([]string, len(cols))
		for i, c := range cols {
			headers[i] = c.header
		}
		fmt.Fprintln(w, strings.Join(headers, "\t"))
	}
	for _, item := range items {
		cells := make([]string, len(cols))
		for i, c := range cols {
			cells[i] = orDash(sanitize(c.cell(item)))
		}
		fmt.Fprintln(w, strings.Join(cells, "\t"))
	}
	_ = w.Flush()
}

// printListOf prints a list response in the session's format.
func (s *clientSession) printListOf(data json.RawMessage, t tableSpec) error {
	if s.structured() {
		if len(bytes.TrimSpace(data)) == 0 || string(bytes.TrimSpace(data)) == "null" {
			data = json.RawMessage("[]")
		}
		return s.printStructured(data)
	}
	items, err := decodeItems(data)
	if err != nil {
		return s.fail(err)
	}
	return s.printItems(items, t)
}

// printItems prints decoded items in a text format (table, wide or name).
func (s *clientSession) printItems(items []map[string]any, t tableSpec) error {
	if s.output == outputName {
		for _, item := range items {
			fmt.Fprintln(s.env.Stdout, sanitize(t.id(item)))
		}
		return nil
	}
	if len(items) == 0 {
		fmt.Fprintln(s.env.Stdout, "No resources found.")
		return nil
	}
	s.printTable(items, s.columnsOf(t))
	return nil
}

// printItem prints one resource with cols.
func (s *clientSession) printItem(data json.RawMessage, cols []column) error {
	return s.printItemOf(data, tableSpec{columns: cols})
}

// printItemOf prints one resource in the session's format.
func (s *clientSession) printItemOf(data json.RawMessage, t tableSpec) error {
	if s.structured() {
		return s.printStructured(data)
	}
	item, err := decodeItem(data)
	if err != nil {
		return s.fail(err)
	}
	return s.printItems([]map[string]any{item}, t)
}

// report prints the outcome of an operation whose table form is a sentence: the sentence, the id
// (-o name), or the response (json, yaml).
func (s *clientSession) report(data json.RawMessage, id, sentence string) error {
	switch {
	case s.structured():
		return s.printStructured(data)
	case s.output == outputName:
		fmt.Fprintln(s.env.Stdout, sanitize(id))
	default:
		fmt.Fprintln(s.env.Stdout, sentence)
	}
	return nil
}

// printDeleted reports a deletion without a response body: a sentence, the id, or {deleted, kind, id}.
func (s *clientSession) printDeleted(kind, id string) error {
	data, _ := json.Marshal(map[string]any{"deleted": true, "kind": strings.ReplaceAll(kind, " ", "_"), "id": id})
	return s.report(data, id, fmt.Sprintf("Deleted %s %s.", kind, sanitize(id)))
}
