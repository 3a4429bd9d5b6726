package chaos

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// LangOld is the Go SDK of the frozen 2.2.1 release (the old side of the
// mixed-fleet scenario): its worker process and its producer driver are
// one program (testdata/oldfleet) built against that release's sdk/go,
// extracted from git history (oldFleetBinary).
const LangOld Lang = "go221"

// LangPrev is the Go SDK of the frozen 2.3.0 release, the release before
// this tree's minor (the old side of the mixed23 scenario), built the same
// way from the same program.
const LangPrev Lang = "go230"

// LangPrev24 is the Go SDK of the frozen 2.4.0 release, the release before
// this tree's minor (2.5.0): the old side of the mixed24 scenario, built
// the same way from the same program.
const LangPrev24 Lang = "go240"

// LangPrev25 is the Go SDK of the frozen 2.5.0 release, the release before
// this tree's minor (2.6.0): the old side of the mixed25 scenario, built
// the same way from the same program.
const LangPrev25 Lang = "go250"

// LangPrev26 is the Go SDK of the frozen 2.6.1 release, the release before
// this tree's minor (2.7.0): the old side of the mixed26policy scenario,
// built the same way from the same program.
const LangPrev26 Lang = "go261"

// LangPrev27 is the Go SDK of the frozen 2.7.0 release, the release before
// this tree's minor (2.8.0): the old side of the mixed27rate scenario,
// built the same way from the same program.
const LangPrev27 Lang = "go270"

// oldRelease is the frozen release the old side of the mixed scenario is
// built from: the commit that added its golden record is the release's tree.
const oldRelease = "2.2.1"

// oldReleases are the frozen releases old-side languages are built from.
var oldReleases = map[Lang]string{LangOld: oldRelease, LangPrev: "2.3.0", LangPrev24: "2.4.0", LangPrev25: "2.5.0", LangPrev26: "2.6.1", LangPrev27: "2.7.0"}

// isOld says whether lang is an old side built from a frozen release.
func isOld(lang Lang) bool {
	_, ok := oldReleases[lang]
	return ok
}

// oldCacheEnv overrides where the built old-side program is cached
// (default: the user's cache directory, emqchaos/oldfleet).
const oldCacheEnv = "EMQCHAOS_CACHE"

// oldShallowHint says how to get the history an old side is built from.
func oldShallowHint(release string) string {
	return "the mixed-fleet scenarios build their old sides from frozen releases' sdk/go in git history (here " + release + "); this clone has no such history (a shallow clone?): run `git fetch --unshallow` (CI: actions/checkout with fetch-depth: 0)"
}

// oldFleetCache holds the built old-side programs, by language.
type oldFleetCache struct {
	mu    sync.Mutex
	paths map[Lang]string
}

var oldFleet oldFleetCache

// oldFleetBinary returns the path of lang's old-side program, building it
// on first use: the commit that added its release's golden/releases/<release>.yaml is found
// in git history, its sdk/go is extracted (git archive) into a scratch
// directory, and testdata/oldfleet/main.go is built against it through a
// go.mod replace. The binary is cached per commit and per source of the
// program, so that reruns do not build it again. A clone without that
// history fails with the hint to fetch it (never a skip).
func oldFleetBinary(lang Lang) (string, error) {
	oldFleet.mu.Lock()
	defer oldFleet.mu.Unlock()
	if p := oldFleet.paths[lang]; p != "" {
		return p, nil
	}
	release, ok := oldReleases[lang]
	if !ok {
		return "", fmt.Errorf("chaos: %q is not an old side", lang)
	}
	src, err := sdkDir("EMQCHAOS_OLDFLEET_DIR", "main.go", "the old side's source is internal/chaos/testdata/oldfleet", "internal", "chaos", "testdata", "oldfleet")
	if err != nil {
		return "", err
	}
	main, err := os.ReadFile(filepath.Join(src, "main.go"))
	if err != nil {
		return "", err
	}
	top, commit, err := oldReleaseCommit(src, release)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(main)
	cache := os.Getenv(oldCacheEnv)
	if cache == "" {
		if cache, err = os.UserCacheDir(); err != nil {
			cache = os.TempDir()
		}
		cache = filepath.Join(cache, "emqchaos")
	}
	dir := filepath.Join(cache, "oldfleet", commit[:12]+"-"+hex.EncodeToString(sum[:6]))
	bin := filepath.Join(dir, "oldfleet")
	if st, err := os.Stat(bin); err == nil && st.Mode().IsRegular() {
		oldFleet.set(lang, bin)
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := buildOldFleet(top, commit, release, main, bin); err != nil {
		return "", err
	}
	oldFleet.set(lang, bin)
	return bin, nil
}

// oldReleaseCommit finds, in the history of the clone holding dir, the
// commit that added the golden record of the old release.
func oldReleaseCommit(dir, release string) (top, commit string, err error) {
	hint := oldShallowHint(release)
	git := func(args ...string) (string, error) {
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("chaos: git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
		}
		return strings.TrimSpace(string(out)), nil
	}
	if _, err := exec.LookPath("git"); err != nil {
		return "", "", fmt.Errorf("chaos: git is not on PATH: %s", hint)
	}
	top, err = git("rev-parse", "--show-toplevel")
	if err != nil {
		return "", "", fmt.Errorf("%w (%s)", err, hint)
	}
	dir = top // the pathspec below is the repository's
	if shallow, err := git("rev-parse", "--is-shallow-repository"); err != nil {
		return "", "", fmt.Errorf("%w (%s)", err, hint)
	} else if shallow == "true" {
		return "", "", fmt.Errorf("chaos: the clone is shallow: %s", hint)
	}
	out, err := git("log", "--diff-filter=A", "--format=%H", "--", "golden/releases/"+release+".yaml")
	if err != nil {
		return "", "", err
	}
	lines := strings.Fields(out)
	if len(lines) == 0 {
		return "", "", fmt.Errorf("chaos: no commit of the history adds golden/releases/%s.yaml: %s", release, hint)
	}
	return top, lines[len(lines)-1], nil // the first that added it, should it have been re-added
}

// buildOldFleet extracts commit's sdk/go from the repository at top and
// builds the program main against it, writing the binary to bin.
func buildOldFleet(top, commit, release string, main []byte, bin string) error {
	work, err := os.MkdirTemp("", "emqchaos-oldfleet-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	arch := exec.Command("git", "-C", top, "archive", "--format=tar", commit, "sdk/go")
	var stderr bytes.Buffer
	arch.Stderr = &stderr
	raw, err := arch.Output()
	if err != nil {
		return fmt.Errorf("chaos: git archive %s sdk/go: %v: %s", commit, err, strings.TrimSpace(stderr.String()))
	}
	if err := untar(bytes.NewReader(raw), work); err != nil {
		return fmt.Errorf("chaos: extracting %s's sdk/go: %w", commit, err)
	}
	sdk := filepath.Join(work, "sdk", "go")
	mod, err := os.ReadFile(filepath.Join(sdk, "go.mod"))
	if err != nil {
		return fmt.Errorf("chaos: %s has no sdk/go/go.mod: %w", commit, err)
	}
	goLine := "go 1.25.0"
	for _, l := range strings.Split(string(mod), "\n") {
		if strings.HasPrefix(l, "go ") {
			goLine = strings.TrimSpace(l)
		}
	}
	prog := filepath.Join(work, "oldfleet")
	if err := os.MkdirAll(prog, 0o755); err != nil {
		return err
	}
	gomod := "module emqoldfleet\n\n" + goLine + "\n\nrequire github.com/echomq/echomq/sdk/go v0.0.0-00010101000000-000000000000\n\nreplace github.com/echomq/echomq/sdk/go => ../sdk/go\n"
	sum, err := os.ReadFile(filepath.Join(sdk, "go.sum"))
	if err != nil {
		return fmt.Errorf("chaos: %s has no sdk/go/go.sum: %w", commit, err)
	}
	for name, data := range map[string][]byte{"go.mod": []byte(gomod), "go.sum": sum, "main.go": main} {
		if err := os.WriteFile(filepath.Join(prog, name), data, 0o644); err != nil {
			return err
		}
	}
	tmp := bin + fmt.Sprintf(".%d.tmp", os.Getpid())
	cmd := exec.Command("go", "build", "-o", tmp, ".")
	cmd.Dir = prog
	// -mod=mod lets go add the SDK's requirements to the program's go.mod;
	// they resolve from the module cache (offline for what go.sum lists and
	// the root module's tests already fetched).
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("chaos: building the old side (testdata/oldfleet) against %s's sdk/go (release %s): %v\n%s", commit[:12], release, err, out)
	}
	return os.Rename(tmp, bin)
}

// untar extracts the regular files and directories of a tar stream under
// dir.
func untar(r io.Reader, dir string) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Clean(h.Name)
		if filepath.IsAbs(name) || strings.HasPrefix(name, "..") {
			return fmt.Errorf("unsafe path %q", h.Name)
		}
		p := filepath.Join(dir, name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		}
	}
}

func (o *oldFleetCache) set(lang Lang, bin string) {
	if o.paths == nil {
		o.paths = map[Lang]string{}
	}
	o.paths[lang] = bin
}
