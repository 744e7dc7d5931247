package filesystem

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"github.com/google/uuid"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/problem"
	"github.com/openclaw/occ/internal/schema"
)

// Name is the implementation name of both drivers.
const Name = "filesystem"

var idPattern = regexp.MustCompile(`^(ns|cfg|sec)_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// checkID accepts exactly <prefix>_<uuidv4>, so an id can never name another path.
func checkID(prefix, id string) error {
	m := idPattern.FindStringSubmatch(id)
	if m == nil || m[1] != prefix {
		return fmt.Errorf("filesystem: invalid %s id", prefix)
	}
	return nil
}

// configurationSchema is the closed {root} schema both drivers accept.
func configurationSchema(description string) driver.ObjectSchema {
	return driver.NewObjectSchema(&schema.Schema{Type: schema.TypeObject, Description: description, Properties: []schema.Property{
		schema.Required("root", &schema.Schema{
			Type: schema.TypeString, MaxBytes: 4096,
			Description: "Absolute directory holding one file per resource (created with mode 0700).",
			Rule: func(v any) (string, string) {
				s, _ := v.(string)
				if !filepath.IsAbs(s) || filepath.Clean(s) != s {
					return problem.DetailInvalidValue, "Must be an absolute, clean path."
				}
				return "", ""
			},
		}),
	}})
}

func rootOf(configuration map[string]any) (string, error) {
	root, _ := configuration["root"].(string)
	if root == "" || !filepath.IsAbs(root) || filepath.Clean(root) != root {
		return "", driver.NewConfigurationError([]problem.Detail{{Path: "/root", Code: problem.DetailInvalidValue, Message: "Must be an absolute, clean path."}}...)
	}
	return root, nil
}

// writeAtomic writes data to dir/name: mkdir (0700), an exclusive temporary file (0600) in dir,
// write, sync, close, rename. The temporary file is always removed.
func writeAtomic(dir, name string, data []byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp := filepath.Join(dir, "."+name+"."+uuid.NewString()+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, name))
}

// readFile reads a stored file; a missing one is notFound.
func readFile(path string, notFound error) ([]byte, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, notFound
	}
	return data, err
}

func removeFile(path string) error {
	err := os.Remove(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}
