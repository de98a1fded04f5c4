package api

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// jwksMaxAge lets MCP servers and proxies cache the key set for a while; a rotation keeps
// the outgoing key published for longer than this (see package mcpcontext).
const jwksMaxAge = "public, max-age=300"

// jwks serves GET /.well-known/jwks.json, without auth: the public keys that verify
// x-mcp-context tokens. Nothing here can sign.
func (s *Server) jwks(c echo.Context) error {
	doc := []byte(`{"keys":[]}`)
	if s.mcpKeys != nil {
		doc = s.mcpKeys.JWKS()
	}
	c.Response().Header().Set("Cache-Control", jwksMaxAge)
	return c.Blob(http.StatusOK, "application/jwk-set+json", doc)
}
