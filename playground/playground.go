// Package playground is the web page the binary serves at GET /: a client of the HTTP API
// that signs in, lists and opens sessions, sends messages, follows the event stream and
// renders everything a turn produces (thinking phases, the final Markdown, GenUI cards, tool
// calls, the applied state patch, validation), so a newcomer sees what the events look like
// and a front-end developer has a working reference.
//
// The page is plain ES modules and CSS in static/, embedded in the binary: no build step,
// no npm at run time. The two libraries it uses, marked (Markdown) and DOMPurify (HTML
// sanitising), are vendored in static/vendor/ by fetch-vendor.sh. Nothing on the page is
// inline, so it runs under [ContentSecurityPolicy].
package playground

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"io/fs"
	"path"
	"strings"

	jsclient "github.com/phaseflow/phaseflow/clients/js"
)

// ContentSecurityPolicy is the policy the page is written for and served with: only its own
// scripts, styles and connections, no inline code, no framing.
const ContentSecurityPolicy = "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; " +
	"connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// IndexFile is the page itself; every other file is named relative to static/ as well.
const IndexFile = "index.html"

// ReferenceFile is the API reference page, which renders the served OpenAPI document.
const ReferenceFile = "reference.html"

// ErrNotFound is returned for a name that is not a file of the page.
var ErrNotFound = errors.New("playground: no such file")

//go:embed static
var static embed.FS

// contentType returns the type of the kinds of file the page is made of, and "" for any
// other kind, which is not served.
func contentType(ext string) string {
	switch ext {
	case ".html":
		return "text/html; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".js", ".mjs":
		return "text/javascript; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	case ".txt":
		return "text/plain; charset=utf-8"
	}
	return ""
}

// Asset is one file of the page, ready to serve.
type Asset struct {
	Name        string
	ContentType string
	// ETag is a strong validator made from the content, so a browser revalidates cheaply
	// and never keeps a file of an older binary.
	ETag string
	Body []byte
}

// Open returns the file name ("index.html", "app.js", "vendor/marked.esm.js"), and under
// client/ the JavaScript client's modules (package jsclient), which the page imports.
// Names that leave static/, hidden files and files of an unlisted kind give [ErrNotFound].
func Open(name string) (Asset, error) {
	ctype := contentType(path.Ext(name))
	if ctype == "" || !fs.ValidPath(name) || strings.HasPrefix(path.Base(name), ".") {
		return Asset{}, ErrNotFound
	}
	var body []byte
	var err error
	if module, ok := strings.CutPrefix(name, "client/"); ok {
		body, err = jsclient.Module(module)
	} else {
		body, err = static.ReadFile("static/" + name)
	}
	if err != nil {
		return Asset{}, ErrNotFound
	}
	sum := sha256.Sum256(body)
	return Asset{Name: name, ContentType: ctype, ETag: `"` + hex.EncodeToString(sum[:12]) + `"`, Body: body}, nil
}
