package preset

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"io"
	"path"
	"sort"
	"strings"
	"unicode/utf8"
)

// Definition is one Preset of the Installation: a name and a template.
type Definition struct {
	Name     string          `json:"name"`
	Template json.RawMessage `json:"template"`
}

//go:embed defaults/*.json
var bundled embed.FS

// ErrDefinition is a file that is not one {name, template} object with a valid template.
var ErrDefinition = errors.New("preset: a Preset file holds one {name, template} object with a valid name and template")

// ParseDefinition reads one Preset file: exactly {"name": …, "template": {…}}, a name valid as a
// resource name (validName) and a template Parse accepts.
func ParseDefinition(data []byte, validName func(string) bool) (Definition, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var d Definition
	if err := dec.Decode(&d); err != nil {
		return Definition{}, ErrDefinition
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Definition{}, ErrDefinition
	}
	if !validName(d.Name) || len(d.Template) == 0 {
		return Definition{}, ErrDefinition
	}
	if _, err := Parse(d.Template); err != nil {
		return Definition{}, errors.Join(ErrDefinition, err)
	}
	return d, nil
}

// Bundled returns the Presets this build ships, in name order.
func Bundled() []Definition {
	entries, _ := bundled.ReadDir("defaults")
	var out []Definition
	for _, e := range entries {
		data, _ := bundled.ReadFile(path.Join("defaults", e.Name()))
		d, err := ParseDefinition(data, func(s string) bool { return s != "" && utf8.ValidString(s) && strings.TrimSpace(s) == s })
		if err != nil {
			// The files are ours and a test parses them; a broken one is a build defect.
			panic("preset: bundled " + e.Name() + ": " + err.Error())
		}
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
