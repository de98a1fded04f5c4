// Package mcpcontext issues and checks x-mcp-context tokens: the short-lived JWTs Phaseflow
// hands each configured MCP server (through the upstream) to say on whose behalf a tool call
// runs — the user, the session, its phase and the strategy in play.
//
// The tokens are signed with a key of their own, never with the HS256 secret of user and
// admin tokens: an asymmetric key (Ed25519, alg EdDSA, or ECDSA P-256, alg ES256) whose
// public half Phaseflow publishes at GET /.well-known/jwks.json. An MCP server verifies with
// that JWKS ([NewVerifier], [NewRemoteVerifier]) and so cannot mint anything: not an
// x-mcp-context token, not a user token. The separation holds in both directions: these
// tokens carry the header typ [HeaderType] and the claim typ [Type], which the user-token
// verifier refuses, and [Verifier] accepts only EdDSA/ES256 tokens signed by a published
// key, carrying both markers, so a user token never passes it.
//
// # Keys
//
// The signing key is the PEM file PHASEFLOW_MCP_KEY_FILE (PKCS#8 "PRIVATE KEY", or SEC 1
// "EC PRIVATE KEY"); without one, an Ed25519 key is generated once and kept in
// <data-dir>/mcp-context-key.pem (0600). Each key's kid is its RFC 7638 JWK thumbprint, so
// it needs no bookkeeping and is the same on every replica that shares the key.
//
// # Rotation
//
// The JWKS publishes the signing key plus every key in PHASEFLOW_MCP_PUBLISHED_KEYS (PEM
// files, private or public), which are published but never used to sign. A change-over
// keeps two keys published, so no MCP server ever holds a token it cannot check:
//
//  1. Make the new key (`openssl genpkey -algorithm ed25519 -out new.pem`) and publish it
//     next to the current one: PHASEFLOW_MCP_PUBLISHED_KEYS=new.pem. Restart (every
//     replica). MCP servers refresh their JWKS cache on their own schedule; [Verifier]
//     also refetches when it sees an unknown kid.
//  2. Sign with the new key and keep the old one published: PHASEFLOW_MCP_KEY_FILE=new.pem,
//     PHASEFLOW_MCP_PUBLISHED_KEYS=old.pem. Restart.
//  3. After the longest token lifetime ([DefaultTTL], 5 minutes) plus the MCP servers'
//     JWKS cache time, drop the old key: PHASEFLOW_MCP_PUBLISHED_KEYS empty. Restart.
//
// For an emergency (a leaked key) skip step 1 and drop the old key at once: tokens in
// flight then fail, which is the point.
package mcpcontext
