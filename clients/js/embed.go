// Package jsclient holds @phaseflow/client, the JavaScript client (src/, plain ES modules),
// and embeds its modules so that the binary serves them under /playground/client/: the
// playground imports the client from there, so the page is the client's first user and
// both are the same files.
package jsclient

import (
	"embed"
	"errors"
	"io/fs"
)

//go:embed src/*.js
var src embed.FS

// ErrNotFound is returned for a name that is not one of the client's modules.
var ErrNotFound = errors.New("jsclient: no such module")

// Module returns the module name ("index.js", "sse.js").
func Module(name string) ([]byte, error) {
	if !fs.ValidPath(name) {
		return nil, ErrNotFound
	}
	b, err := src.ReadFile("src/" + name)
	if err != nil {
		return nil, ErrNotFound
	}
	return b, nil
}
