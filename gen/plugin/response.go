package plugin

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Response is the document a plugin writes on its standard output.
type Response struct {
	Schema string `json:"schema"`
	// Files are the plugin's files, their paths relative to the plugin's
	// out directory.
	Files []File `json:"files"`
	// Errors, when not empty, fail the generation: the plugin could not
	// render the request. Each is one message for the user.
	Errors []string `json:"errors"`
}

// File is one file of a response: a relative, slash-separated, clean path
// under the plugin's out directory and the file's exact text.
type File struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

// The JSON Schemas of the request and the response (draft 2020-12).
var (
	//go:embed request.schema.json
	RequestSchemaJSON []byte
	//go:embed response.schema.json
	ResponseSchemaJSON []byte
)

// Schema URLs: the $id of each schema, under which it is compiled.
const (
	RequestSchemaID  = "https://github.com/echomq/echomq/gen/plugin/request.schema.json"
	ResponseSchemaID = "https://github.com/echomq/echomq/gen/plugin/response.schema.json"
)

var (
	schemaOnce sync.Once
	schemas    map[string]*jsonschema.Schema
	schemaErr  error
)

// compiled returns the compiled schema with id (RequestSchemaID or
// ResponseSchemaID).
func compiled(id string) (*jsonschema.Schema, error) {
	schemaOnce.Do(func() {
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		schemas = map[string]*jsonschema.Schema{}
		for sid, data := range map[string][]byte{RequestSchemaID: RequestSchemaJSON, ResponseSchemaID: ResponseSchemaJSON} {
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
			if err != nil {
				schemaErr = fmt.Errorf("plugin: schema %s: %w", sid, err)
				return
			}
			if err := c.AddResource(sid, doc); err != nil {
				schemaErr = fmt.Errorf("plugin: schema %s: %w", sid, err)
				return
			}
		}
		for _, sid := range []string{RequestSchemaID, ResponseSchemaID} {
			s, err := c.Compile(sid)
			if err != nil {
				schemaErr = fmt.Errorf("plugin: schema %s: %w", sid, err)
				return
			}
			schemas[sid] = s
		}
	})
	return schemas[id], schemaErr
}

// ValidateRequest checks a request document against request.schema.json.
func ValidateRequest(data []byte) error { return validate(RequestSchemaID, data) }

// ValidateResponse checks a response document against
// response.schema.json.
func ValidateResponse(data []byte) error { return validate(ResponseSchemaID, data) }

func validate(id string, data []byte) error {
	s, err := compiled(id)
	if err != nil {
		return err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	if err := s.Validate(doc); err != nil {
		return err
	}
	return nil
}

// DecodeResponse checks data against the response schema and decodes it.
// It does not check the files' paths or headers; the host does that
// against the plugin's out directory.
func DecodeResponse(data []byte) (*Response, error) {
	if err := ValidateResponse(data); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var r Response
	if err := dec.Decode(&r); err != nil {
		return nil, err
	}
	if r.Schema != ResponseSchema {
		return nil, fmt.Errorf("schema is %q, want %q", r.Schema, ResponseSchema)
	}
	return &r, nil
}

// CheckPath reports an error unless p is a path a plugin may return: not
// empty, relative, slash-separated, clean and inside its out directory
// (no "." or ".." element).
func CheckPath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("empty file path")
	case strings.Contains(p, "\\"):
		return fmt.Errorf("file path %q must be slash-separated", p)
	case path.IsAbs(p):
		return fmt.Errorf("file path %q must be relative to the out directory", p)
	case path.Clean(p) != p || p == "." || p == ".." || strings.HasPrefix(p, "../"):
		return fmt.Errorf("file path %q must be clean and stay inside the out directory", p)
	}
	return nil
}
