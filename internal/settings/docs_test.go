package settings

import (
	"os"
	"strings"
	"testing"
)

// TestDocsListEveryVariable keeps docs/settings.md in step with the loaders.
func TestDocsListEveryVariable(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/settings.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range Variables {
		if !strings.Contains(string(doc), "| `"+v.Name+"` |") {
			t.Errorf("docs/settings.md does not document %s", v.Name)
		}
	}
}
