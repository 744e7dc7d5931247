// Package figures is the machine-readable output every bench command writes with -json, and that
// cmd/benchall merges into one table.
package figures

import (
	"encoding/json"
	"os"
	"slices"
	"time"
)

// Figure is one measured value.
type Figure struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
}

// Report is one command's output.
type Report struct {
	Tool    string   `json:"tool"`
	Figures []Figure `json:"figures"`
	Notes   []string `json:"notes,omitempty"`
}

// Add appends a figure.
func (r *Report) Add(name string, value float64, unit string) {
	r.Figures = append(r.Figures, Figure{Name: name, Value: value, Unit: unit})
}

// Write writes the report as indented JSON to path (nothing when path is empty).
func (r *Report) Write(path string) error {
	if path == "" {
		return nil
	}
	raw, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(raw, '\n'), 0o644)
}

// Read reads a report written by Write.
func Read(path string) (Report, error) {
	var r Report
	raw, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	return r, json.Unmarshal(raw, &r)
}

// Percentile returns the p-quantile (0..1, nearest rank) of s; s need not be sorted.
func Percentile(s []time.Duration, p float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	c := slices.Clone(s)
	slices.Sort(c)
	i := int(p*float64(len(c))+0.999999) - 1
	return c[max(0, min(len(c)-1, i))]
}

// Ms is d in milliseconds.
func Ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
