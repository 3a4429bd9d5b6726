package apirecord

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync/atomic"
)

// The API records of the TypeScript and Python SDKs are read by running a
// tool (tsc under node, Python's ast under python3); the TypeScript one
// takes seconds. Each record read is kept on disk under a digest of every
// input it depends on — the tool's own files and the interpreter that runs
// it, and every file of the package read, by content — so a check whose
// SDK sources did not change reads the record from the cache and runs no
// compiler. An entry carries the digest of its own content: one that does
// not match (a torn write, a disk error, an edit) is ignored, and the
// record is read again and the entry rewritten.

// CacheEnv names the environment variable that overrides where the records
// are cached: a directory, or "off" to read every record anew. By default
// they are cached under the user's cache directory (os.UserCacheDir), in
// emqgen/apirecord.
const CacheEnv = "EMQGEN_CACHE_DIR"

// cacheFormat is the version of the cache entries' layout and of the keys:
// a change of either starts a new cache.
const cacheFormat = "emqgen-apirecord-v1"

// toolRuns counts the tool runs (the records not found in a cache), for
// tests.
var toolRuns atomic.Int64

// cacheDir is the directory of the on-disk cache, or "" when it is off or
// the user has no cache directory.
func cacheDir() string {
	if d := os.Getenv(CacheEnv); d != "" {
		if d == "off" {
			return ""
		}
		return filepath.Join(d, "apirecord")
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "emqgen", "apirecord")
}

// buildVersion names the build of this program, part of every key: the
// module's version and its VCS revision when the build records them.
var buildVersion = func() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	v := bi.Main.Path + "@" + bi.Main.Version
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" || s.Key == "vcs.modified" {
			v += " " + s.Key + "=" + s.Value
		}
	}
	return v
}()

// keyHash starts the digest of a record's inputs: the cache's format, the
// build and the record's kind.
func keyHash(kind string) hash.Hash {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00", cacheFormat, buildVersion, kind)
	return h
}

// hashFile adds a file to a key by its name relative to dir and its
// content; a file that does not exist is added as missing.
func hashFile(h hash.Hash, dir, path string) error {
	rel, err := filepath.Rel(dir, path)
	if err != nil {
		rel = path
	}
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		fmt.Fprintf(h, "%s\x00missing\x00", filepath.ToSlash(rel))
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(h, "%s\x00%d\x00", filepath.ToSlash(rel), len(data))
	h.Write(data)
	return nil
}

// hashTree adds every file under root whose name keep accepts (every file
// when keep is nil), in lexical order, skipping the directories skip
// names; a root that does not exist is added as missing.
func hashTree(h hash.Hash, dir, root string, keep func(name string) bool, skip ...string) error {
	if _, err := os.Stat(root); os.IsNotExist(err) {
		rel, _ := filepath.Rel(dir, root)
		fmt.Fprintf(h, "%s/\x00missing\x00", filepath.ToSlash(rel))
		return nil
	}
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			for _, s := range skip {
				if d.Name() == s && path != root {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if keep != nil && !keep(d.Name()) {
			return nil
		}
		return hashFile(h, dir, path)
	})
}

// hashProgram adds an interpreter to a key: its path and, so that an
// upgrade in place is another key, its size and modification time.
func hashProgram(h hash.Hash, path string) {
	fmt.Fprintf(h, "program\x00%s\x00", path)
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	if st, err := os.Stat(path); err == nil {
		fmt.Fprintf(h, "%s\x00%d\x00%d\x00", path, st.Size(), st.ModTime().UnixNano())
	}
}

// cacheLoad returns the record cached under key, if an intact entry holds
// it.
func cacheLoad(key string) ([]string, bool) {
	dir := cacheDir()
	if dir == "" {
		return nil, false
	}
	data, err := os.ReadFile(filepath.Join(dir, key))
	if err != nil {
		return nil, false
	}
	return decodeEntry(data)
}

// decodeEntry reads a cache entry: a first line "<cacheFormat> <sha256 of
// the rest>", then the record's lines. An entry whose digest does not
// match its content is not read.
func decodeEntry(data []byte) ([]string, bool) {
	head, body, ok := bytes.Cut(data, []byte("\n"))
	if !ok {
		return nil, false
	}
	sum := sha256.Sum256(body)
	if string(head) != cacheFormat+" "+hex.EncodeToString(sum[:]) {
		return nil, false
	}
	var lines []string
	for _, l := range strings.Split(string(body), "\n") {
		if l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return nil, false
	}
	return lines, true
}

// cacheStore writes the record under key, atomically (a reader sees the
// old entry or the new one); a cache that cannot be written is no error:
// the record is read anew next time.
func cacheStore(key string, lines []string) {
	dir := cacheDir()
	if dir == "" {
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return
	}
	body := []byte(strings.Join(lines, "\n") + "\n")
	sum := sha256.Sum256(body)
	data := append([]byte(cacheFormat+" "+hex.EncodeToString(sum[:])+"\n"), body...)
	f, err := os.CreateTemp(dir, key+".tmp-")
	if err != nil {
		return
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if werr != nil || cerr != nil || os.Rename(f.Name(), filepath.Join(dir, key)) != nil {
		os.Remove(f.Name())
	}
}

// validLines reports whether every line of a cached record is a line of
// its kind (key is tsKey or pyKey): an entry that is not is not read.
func validLines(lines []string, key func(string) (string, string, error)) bool {
	for _, l := range lines {
		if _, _, err := key(l); err != nil {
			return false
		}
	}
	return true
}
