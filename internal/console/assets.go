package console

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"
)

// asset is one served file under its hashed name.
type asset struct {
	name        string // hashed path below the assets root, e.g. js/api.3f2a9c1b0d.js
	contentType string
	body        []byte
	gzipped     []byte // nil when compression does not pay
}

// assetSet is every file of the assets tree: logical name (js/api.js) → asset.
type assetSet struct {
	byLogical map[string]*asset
	byHashed  map[string]*asset
}

// References between assets: static ES module statements at the start of a line (import … from
// "./x.js", import "./x.js", export … from "./x.js"; dynamic import() is not used) and CSS
// url(…). Only relative references are allowed; anything else is refused when the set is built.
var (
	jsReference  = regexp.MustCompile(`(?m)^(\s*(?:import\s+(?:[^'"\n]*?\sfrom\s*)?|export\s+[^'"\n]*?\sfrom\s*))(["'])([^"'\n]+)(["'])`)
	cssReference = regexp.MustCompile(`url\(\s*(["']?)([^"')\s]+)(["']?)\s*\)`)
)

var contentTypes = map[string]string{
	".js":  "text/javascript; charset=utf-8",
	".css": "text/css; charset=utf-8",
	".svg": "image/svg+xml",
	".png": "image/png",
}

// buildAssets reads every file below root, rewrites relative references to hashed names and
// hashes each file after rewriting, so a change to one module changes the names of the modules
// that import it and no browser keeps a stale graph. Reference cycles are refused: a file's name
// depends on the names it references.
func buildAssets(files fs.FS, root string) (*assetSet, error) {
	sources := map[string][]byte{}
	err := fs.WalkDir(files, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(files, p)
		if err != nil {
			return err
		}
		sources[strings.TrimPrefix(p, root+"/")] = body
		return nil
	})
	if err != nil {
		return nil, err
	}
	set := &assetSet{byLogical: map[string]*asset{}, byHashed: map[string]*asset{}}
	visiting := map[string]bool{}
	var build func(name string) (*asset, error)
	build = func(name string) (*asset, error) {
		if a, ok := set.byLogical[name]; ok {
			return a, nil
		}
		src, ok := sources[name]
		if !ok {
			return nil, fmt.Errorf("console: %s is referenced but does not exist", name)
		}
		if visiting[name] {
			return nil, fmt.Errorf("console: reference cycle through %s", name)
		}
		visiting[name] = true
		defer delete(visiting, name)
		body, err := rewriteReferences(name, src, func(target string) (string, error) {
			a, err := build(target)
			if err != nil {
				return "", err
			}
			return a.name, nil
		})
		if err != nil {
			return nil, err
		}
		ext := path.Ext(name)
		ct, ok := contentTypes[ext]
		if !ok {
			return nil, fmt.Errorf("console: %s has no known content type", name)
		}
		sum := sha256.Sum256(body)
		a := &asset{name: strings.TrimSuffix(name, ext) + "." + hex.EncodeToString(sum[:5]) + ext, contentType: ct, body: body}
		if ext != ".png" {
			a.gzipped = compress(body)
		}
		set.byLogical[name], set.byHashed[a.name] = a, a
		return a, nil
	}
	names := make([]string, 0, len(sources))
	for n := range sources {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if _, err := build(n); err != nil {
			return nil, err
		}
	}
	return set, nil
}

// rewriteReferences replaces every relative reference of the file name (a logical path) with
// the hashed name resolve returns for its target, keeping it relative to the file's directory.
func rewriteReferences(name string, src []byte, resolve func(string) (string, error)) ([]byte, error) {
	dir := path.Dir(name)
	var failure error
	replace := func(spec string) string {
		if failure != nil {
			return spec
		}
		if !strings.HasPrefix(spec, "./") && !strings.HasPrefix(spec, "../") {
			failure = fmt.Errorf("console: %s references %q: only relative references are allowed", name, spec)
			return spec
		}
		target := path.Clean(path.Join(dir, spec))
		hashed, err := resolve(target)
		if err != nil {
			failure = err
			return spec
		}
		rel := relative(dir, hashed)
		return rel
	}
	var out []byte
	switch path.Ext(name) {
	case ".js":
		out = jsReference.ReplaceAllFunc(src, func(m []byte) []byte {
			g := jsReference.FindSubmatch(m)
			return []byte(string(g[1]) + string(g[2]) + replace(string(g[3])) + string(g[4]))
		})
	case ".css":
		out = cssReference.ReplaceAllFunc(src, func(m []byte) []byte {
			g := cssReference.FindSubmatch(m)
			return []byte("url(" + string(g[1]) + replace(string(g[2])) + string(g[3]) + ")")
		})
	default:
		out = src
	}
	return out, failure
}

// relative is the path of target (below the assets root) as seen from the directory dir.
func relative(dir, target string) string {
	if dir == "." {
		return "./" + target
	}
	from := strings.Split(dir, "/")
	to := strings.Split(target, "/")
	i := 0
	for i < len(from) && i < len(to)-1 && from[i] == to[i] {
		i++
	}
	up := strings.Repeat("../", len(from)-i)
	if up == "" {
		up = "./"
	}
	return up + strings.Join(to[i:], "/")
}

func compress(body []byte) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	_, _ = zw.Write(body)
	_ = zw.Close()
	if buf.Len() >= len(body) {
		return nil
	}
	return buf.Bytes()
}

// modules lists the hashed names of every JavaScript module, for modulepreload links: the
// browser fetches the whole graph at once instead of one import level at a time.
func (s *assetSet) modules() []string {
	var out []string
	for _, a := range s.byHashed {
		if strings.HasSuffix(a.name, ".js") {
			out = append(out, a.name)
		}
	}
	sort.Strings(out)
	return out
}
