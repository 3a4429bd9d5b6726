package gate

import (
	"bytes"

	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/echomq/echomq/gen/manifest"
	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/govern/compat"
	"github.com/echomq/echomq/govern/release"
)

// Baseline is what a change is judged against, resolved once: its side
// (the manifest, and a surface whose API records are the ones a frozen
// release keeps beside it, or the ones generated from a manifest file or
// the manifest at a git ref), and where its witness — the conformance
// scenarios the behavioural witness replays — comes from.
type Baseline struct {
	// Side is the baseline's side of the comparison.
	Side compat.Side
	// Release is the frozen release the baseline is, when it is one (the
	// newest by default, or the release -base names by its file).
	Release *release.Release
	// Label names the baseline in notes: "the frozen release 2.6.0" or
	// "the baseline origin/main".
	Label string

	root, base, file string
	// data is the manifest's bytes at a git ref (nil otherwise).
	data []byte
	tmp  string
}

// Close removes what resolving the baseline wrote (a git ref's witness).
func (b *Baseline) Close() {
	if b != nil && b.tmp != "" {
		os.RemoveAll(b.tmp)
		b.tmp = ""
	}
}

// DecodeError is a manifest that does not decode: it cannot be compared.
type DecodeError struct {
	Label string
	Err   error
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("%v\n%s cannot be compared: it does not decode", e.Err, e.Label)
}

func (e *DecodeError) Unwrap() error { return e.Err }

// Resolve resolves the baseline a check of the manifest file under root
// is judged against: base "" is the newest frozen release under root; a
// file is that manifest (a frozen release, with every record beside it,
// when it is one); anything else is a git ref, whose manifest (at file's
// path) and conformance scenarios are read with git. notef receives what
// the caller should know (a baseline that does not validate).
func Resolve(root, base, file string, notef func(string, ...any)) (*Baseline, error) {
	b := &Baseline{root: root, base: base, file: file}
	if base == "" {
		r, err := release.Newest(root)
		if err != nil {
			return nil, err
		}
		return b, b.fromRelease(r)
	}
	if st, err := os.Stat(base); err == nil && !st.IsDir() {
		if r, ok := release.Open(root, base); ok {
			// A frozen release named by its file: every record beside it,
			// as for the newest.
			return b, b.fromRelease(r)
		}
		data, err := os.ReadFile(base)
		if err != nil {
			return nil, err
		}
		s, _, err := sideOf(root, base, data, notef)
		if err != nil {
			return nil, err
		}
		b.Side, b.Label = *s, "the baseline "+base
		return b, nil
	}
	dir, name := filepath.Split(file)
	if dir == "" {
		dir = "."
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command("git", "-C", dir, "show", base+":./"+name)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("-base %q is neither a file nor a git ref with %s: git show: %v: %s", base, name, err, strings.TrimSpace(stderr.String()))
	}
	b.data = stdout.Bytes()
	s, _, err := sideOf(root, base+":"+filepath.ToSlash(file), b.data, notef)
	if err != nil {
		return nil, err
	}
	b.Side, b.Label = *s, "the baseline "+base
	return b, nil
}

func (b *Baseline) fromRelease(r release.Release) error {
	s, err := r.Side()
	if err != nil {
		return fmt.Errorf("baseline %s: %v", r.Manifest, err)
	}
	b.Side, b.Release, b.Label = s, &r, "the frozen release "+r.Version.String()
	return nil
}

// witnessSource is where the baseline's witness comes from: its scenario
// directory, its manifest file and what to call it.
type witnessSource struct {
	scenarios, manifest, label string
}

// witness finds the baseline's scenarios: a frozen release's witness (the
// newest, or the release -base names by its file), the witness beside a
// manifest file, or the conformance scenarios at the git ref -base names
// (written to a scratch directory with the manifest read at the ref).
func (b *Baseline) witness() (witnessSource, error) {
	switch {
	case b.base == "":
		r := b.Release
		if !r.HasWitness() {
			return witnessSource{}, fmt.Errorf("the frozen release %s keeps no witness (%s/*.yaml), so there is nothing to replay", r.Version, r.WitnessScenarios())
		}
		return witnessSource{scenarios: r.WitnessScenarios(), manifest: r.Manifest, label: r.Version.String()}, nil
	case b.data == nil:
		if r := b.Release; r != nil && !r.HasWitness() {
			return witnessSource{}, fmt.Errorf("the frozen release %s keeps no witness (%s/*.yaml): it was frozen before releases kept their conformance scenarios", r.Version, r.WitnessScenarios())
		}
		r := release.Release{Witness: strings.TrimSuffix(b.base, filepath.Ext(b.base)) + ".witness"}
		if !r.HasWitness() {
			return witnessSource{}, fmt.Errorf("the baseline %s has no witness beside it (%s/*.yaml): give -base a frozen release or a git ref, whose conformance scenarios are replayed", b.base, r.WitnessScenarios())
		}
		return witnessSource{scenarios: r.WitnessScenarios(), manifest: b.base, label: b.base}, nil
	}
	// A git ref: its conformance scenarios and its manifest, into a
	// scratch directory.
	tmp, err := os.MkdirTemp("", "emqgen-witness-")
	if err != nil {
		return witnessSource{}, err
	}
	b.tmp = tmp
	gitOut := func(args ...string) ([]byte, error) {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command("git", append([]string{"-C", b.root}, args...)...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
		}
		return stdout.Bytes(), nil
	}
	names, err := gitOut("ls-tree", "--name-only", b.base+":./"+scenariosDir)
	if err != nil {
		return witnessSource{}, fmt.Errorf("the conformance scenarios at %s: %v", b.base, err)
	}
	dir := filepath.Join(tmp, "scenarios")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return witnessSource{}, err
	}
	for _, n := range strings.Fields(string(names)) {
		if !strings.HasSuffix(n, ".yaml") {
			continue
		}
		data, err := gitOut("show", b.base+":./"+scenariosDir+"/"+n)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, filepath.Base(n)), data, 0o644)
		}
		if err != nil {
			return witnessSource{}, err
		}
	}
	manifestFile := filepath.Join(tmp, filepath.Base(b.file))
	if err := os.WriteFile(manifestFile, b.data, 0o644); err != nil {
		return witnessSource{}, fmt.Errorf("the manifest at %s: %v", b.base, err)
	}
	return witnessSource{scenarios: dir, manifest: manifestFile, label: b.base}, nil
}

// sideOf decodes a manifest as one side of a comparison; the hand-written
// layer of the Go SDK, part of its surface, is read from the working tree
// at root. A manifest that decodes but does not validate is still
// compared, on its leaves only (its artifacts cannot be generated): its
// validation error is returned as invalid, and noted when notef is given.
func sideOf(root, label string, data []byte, notef func(string, ...any)) (s *compat.Side, p *model.Protocol, err error) {
	m, err := manifest.Parse(label, data)
	if err != nil {
		return nil, nil, &DecodeError{Label: label, Err: err}
	}
	s = &compat.Side{File: label, Manifest: m}
	p, err = model.Resolve(label, m)
	if err != nil {
		s.Invalid = err
		if notef != nil {
			notef("%s does not validate, so its generated artifacts are not compared:\n%v", label, err)
		}
		return s, nil, nil
	}
	if s.Surface, err = compat.SurfaceOf(root, p); err != nil {
		return nil, nil, err
	}
	return s, p, nil
}

// Side loads the manifest at file as a side of a comparison (as Resolve
// loads a baseline manifest file): its validation error, when it does not
// validate, is the side's Invalid.
func Side(root, file string) (*compat.Side, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	s, _, err := sideOf(root, file, data, nil)
	return s, err
}
