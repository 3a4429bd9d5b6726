// Command echo is the test plugin of gen/plugin: a minimal target written
// against the plugin contract alone (it imports nothing of emqgen). It
// reads an emqgen.plugin.request/v1 on stdin and writes, under its out
// directory, a Python module of the protocol's constants and a text list
// of the wire classes. Its "mode" option makes it misbehave on purpose so
// that the host's checks can be tested: noheader, escape, absolute, dup,
// fail, garbage, errors, slow.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"
)

// request is the part of the request this plugin reads.
type request struct {
	Schema string `json:"schema"`
	Emqgen struct {
		Header struct {
			Marker     string `json:"marker"`
			Source     string `json:"source"`
			Regenerate string `json:"regenerate"`
		} `json:"header"`
	} `json:"emqgen"`
	Protocol struct {
		Name          string `json:"name"`
		VersionRecord string `json:"version_record"`
		Version       struct {
			Text string `json:"text"`
		} `json:"version"`
		Classes []struct {
			Word string `json:"word"`
			Name string `json:"name"`
		} `json:"classes"`
		Scripts []struct {
			Name string `json:"name"`
			Keys []struct {
				Name  string `json:"name"`
				Shape string `json:"shape"`
			} `json:"keys"`
		} `json:"scripts"`
	} `json:"protocol"`
	Bundle struct {
		Digest  string `json:"digest"`
		Scripts []struct {
			Name string `json:"name"`
			SHA1 string `json:"sha1"`
		} `json:"scripts"`
	} `json:"bundle"`
	Options struct {
		Mode   string `json:"mode"`
		Module string `json:"module"`
	} `json:"options"`
}

type file struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

type response struct {
	Schema string   `json:"schema"`
	Files  []file   `json:"files"`
	Errors []string `json:"errors,omitempty"`
}

func main() {
	var req request
	dec := json.NewDecoder(os.Stdin)
	if err := dec.Decode(&req); err != nil {
		fmt.Fprintln(os.Stderr, "echo: reading the request:", err)
		os.Exit(2)
	}
	if req.Schema != "emqgen.plugin.request/v1" {
		fmt.Fprintf(os.Stderr, "echo: request schema %q is not one this plugin reads\n", req.Schema)
		os.Exit(2)
	}
	resp := response{Schema: "emqgen.plugin.response/v1", Files: render(&req)}
	switch req.Options.Mode {
	case "":
	case "noheader":
		resp.Files[0].Content = strings.SplitN(resp.Files[0].Content, "\n", 2)[1]
	case "escape":
		resp.Files[0].Path = "../escape.py"
	case "absolute":
		resp.Files[0].Path = "/tmp/absolute.py"
	case "dup":
		resp.Files = append(resp.Files, resp.Files[0])
	case "fail":
		fmt.Fprintln(os.Stderr, "echo: failing on purpose")
		os.Exit(3)
	case "garbage":
		fmt.Println("this is not a response")
		return
	case "errors":
		resp.Files = []file{}
		resp.Errors = []string{"cannot render script widen: unsupported reply"}
	case "slow":
		time.Sleep(time.Minute)
	default:
		fmt.Fprintf(os.Stderr, "echo: unknown mode %q\n", req.Options.Mode)
		os.Exit(2)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(resp); err != nil {
		fmt.Fprintln(os.Stderr, "echo:", err)
		os.Exit(1)
	}
}

// render returns the plugin's files: constants.py and classes/words.txt.
func render(req *request) []file {
	h := req.Emqgen.Header
	p := req.Protocol
	module := req.Options.Module
	if module == "" {
		module = "constants"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n# Source: %s. Regenerate: %s.\n\"\"\"The %s protocol's constants.\"\"\"\n\n", h.Marker, h.Source, h.Regenerate, p.Name)
	fmt.Fprintf(&b, "PROTOCOL = %q\nVERSION = %q\nVERSION_RECORD = %q\nBUNDLE_DIGEST = %q\n\n", p.Name, p.Version.Text, p.VersionRecord, req.Bundle.Digest)
	b.WriteString("SCRIPT_SHA1 = {\n")
	for _, s := range req.Bundle.Scripts {
		fmt.Fprintf(&b, "    %q: %q,\n", s.Name, s.SHA1)
	}
	b.WriteString("}\n\nSCRIPT_KEYS = {\n")
	for _, s := range p.Scripts {
		var keys []string
		for _, k := range s.Keys {
			keys = append(keys, fmt.Sprintf("%q", k.Shape))
		}
		fmt.Fprintf(&b, "    %q: [%s],\n", s.Name, strings.Join(keys, ", "))
	}
	b.WriteString("}\n")
	var w strings.Builder
	fmt.Fprintf(&w, "# %s\n", h.Marker)
	for _, c := range p.Classes {
		fmt.Fprintf(&w, "%s %s\n", c.Word, c.Name)
	}
	return []file{
		{Path: module + ".py", Content: b.String()},
		{Path: "classes/words.txt", Content: w.String()},
	}
}
