package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"
)

// Input of the client commands: --file documents (JSON or YAML, a file or standard input) and
// Secret values.

const stdinName = "standard input"

// readInput reads at most limit bytes from path ("-" is standard input). The error is a sentence
// naming the source and the operating system's reason.
func readInput(env Env, path string, limit int) ([]byte, string, error) {
	var r io.Reader
	source := path
	if path == "-" {
		source = stdinName
		if env.Stdin == nil {
			return nil, source, errors.New("standard input is not available")
		}
		r = env.Stdin
	} else {
		f, err := os.Open(path)
		if err != nil {
			return nil, source, fmt.Errorf("cannot read %s: %v", path, osReason(err))
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, source, fmt.Errorf("cannot read %s: %v", source, osReason(err))
	}
	if len(data) > limit {
		return nil, source, fmt.Errorf("%s is larger than %d KiB", source, limit>>10)
	}
	return data, source, nil
}

// readJSONFile reads --file: one JSON or YAML object from a file or standard input ("-"), at most
// 64 KiB, and returns it as JSON.
func readJSONFile(env Env, path string) ([]byte, error) {
	if path == "" {
		return nil, usageError(env, "--file is required: a JSON or YAML file with the resource (- reads standard input).")
	}
	data, source, err := readInput(env, path, maxFileBytes)
	if err != nil {
		return nil, usageError(env, "%v.", err)
	}
	doc, err := parseDocument(data)
	if err != nil {
		return nil, usageError(env, "%s: %v", source, err)
	}
	return doc, nil
}

// parseDocument turns a JSON or YAML object into JSON. A document whose first character is { is
// JSON and its syntax errors name line and column; anything else is YAML (a superset of JSON).
func parseDocument(data []byte) ([]byte, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, errors.New("the document is empty")
	}
	var doc any
	if trimmed[0] == '{' {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if err := dec.Decode(&doc); err != nil {
			return nil, jsonSyntaxError(data, err, dec.InputOffset())
		}
		if _, err := dec.Token(); err != io.EOF {
			line, column := position(data, dec.InputOffset())
			return nil, fmt.Errorf("line %d, column %d: unexpected content after the JSON object", line, column)
		}
	} else {
		converted, err := yaml.YAMLToJSONStrict(data)
		if err != nil {
			msg := strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")
			return nil, fmt.Errorf("invalid YAML: %s", strings.TrimPrefix(msg, "yaml: "))
		}
		dec := json.NewDecoder(bytes.NewReader(converted))
		dec.UseNumber()
		if err := dec.Decode(&doc); err != nil {
			return nil, errors.New("invalid YAML")
		}
	}
	if _, ok := doc.(map[string]any); !ok {
		return nil, errors.New("the document is not an object (a JSON object or a YAML mapping)")
	}
	return json.Marshal(doc)
}

// jsonSyntaxError names the line and column of a JSON error.
func jsonSyntaxError(data []byte, err error, fallback int64) error {
	offset := fallback
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		offset = se.Offset
	case errors.As(err, &te):
		offset = te.Offset
	case errors.Is(err, io.ErrUnexpectedEOF):
		offset = int64(len(data)) + 1 // just after the last character
		err = errors.New("unexpected end of the document")
	}
	line, column := position(data, offset)
	return fmt.Errorf("line %d, column %d: %s", line, column, strings.TrimPrefix(err.Error(), "json: "))
}

// position is the 1-based line and column of a byte offset.
func position(data []byte, offset int64) (int, int) {
	if offset > int64(len(data))+1 {
		offset = int64(len(data)) + 1
	}
	if offset < 0 {
		offset = 0
	}
	before := data[:min(offset, int64(len(data)))]
	line := bytes.Count(before, []byte("\n")) + 1
	column := int(offset) - (bytes.LastIndexByte(before, '\n') + 1)
	if column < 1 {
		column = 1
	}
	return line, column
}

// maxSecretValueBytes is the API's limit of a Secret value.
const maxSecretValueBytes = 64 << 10

// secretValueFlags are the three ways to give a Secret value; exactly one is used.
type secretValueFlags struct {
	literal, file string
	stdin         bool
}

func (f *secretValueFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.literal, "from-literal", "", "the value itself (visible in the shell history and the process list)")
	cmd.Flags().StringVar(&f.file, "from-file", "", "read the value from this file, byte for byte")
	cmd.Flags().BoolVar(&f.stdin, "from-stdin", false, "read the value from standard input (one trailing newline is dropped)")
}

// given reports whether any of the value flags is set.
func (f *secretValueFlags) given(cmd *cobra.Command) bool {
	return cmd.Flags().Changed("from-literal") || cmd.Flags().Changed("from-file") || f.stdin
}

// value returns the Secret value of the one flag given.
func (f *secretValueFlags) value(env Env, cmd *cobra.Command) (string, error) {
	n := 0
	for _, name := range []string{"from-literal", "from-file"} {
		if cmd.Flags().Changed(name) {
			n++
		}
	}
	if f.stdin {
		n++
	}
	if n != 1 {
		return "", usageError(env, "give the value with exactly one of --from-literal VALUE, --from-file PATH or --from-stdin.")
	}
	var raw []byte
	switch {
	case cmd.Flags().Changed("from-literal"):
		raw = []byte(f.literal)
	case cmd.Flags().Changed("from-file"):
		data, _, err := readInput(env, f.file, maxSecretValueBytes)
		if err != nil {
			return "", usageError(env, "--from-file: %v.", err)
		}
		raw = data
	default:
		data, _, err := readInput(env, "-", maxSecretValueBytes+2)
		if err != nil {
			return "", usageError(env, "--from-stdin: %v.", err)
		}
		data = bytes.TrimSuffix(data, []byte("\n"))
		data = bytes.TrimSuffix(data, []byte("\r"))
		raw = data
	}
	if len(raw) == 0 {
		return "", usageError(env, "the Secret value is empty.")
	}
	if len(raw) > maxSecretValueBytes {
		return "", usageError(env, "the Secret value is larger than 64 KiB.")
	}
	return string(raw), nil
}
