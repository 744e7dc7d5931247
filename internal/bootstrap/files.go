package bootstrap

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// checkOutputPath refuses an output file that already exists (even as a dangling symlink) or whose
// parent is not a real directory private to its owner. It runs before any database write.
func checkOutputPath(path string) error {
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("%s already exists; bootstrap never overwrites an output file", path)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	parent := filepath.Dir(path)
	info, err := os.Lstat(parent)
	if err != nil {
		return fmt.Errorf("output directory %s: %w", parent, err)
	}
	if info.Mode()&fs.ModeSymlink != 0 || !info.IsDir() {
		return fmt.Errorf("output directory %s is not a directory", parent)
	}
	if info.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("output directory %s is writable by group or others", parent)
	}
	return nil
}

// writeExclusive creates path with mode 0600, refusing to follow or replace anything, writes
// data and makes it durable (file and directory entry).
func writeExclusive(path string, data []byte) (err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			_ = os.Remove(path)
		}
	}()
	// The umask cannot widen 0600, but an inherited ACL could; set it explicitly.
	if err = f.Chmod(0o600); err != nil {
		return err
	}
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer dir.Close()
	return dir.Sync()
}

func removeFile(path string) error { return os.Remove(path) }
