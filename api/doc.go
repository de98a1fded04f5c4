// Package api is Phaseflow's HTTP surface (docs/api.md): the echo server, its routes,
// authentication, the server-sent-events writer (with the detached streams that carry on
// once their handlers have returned, without a goroutine while they wait: detach.go,
// waiting.go) and the one place where errors
// become HTTP statuses. Handlers return errors; [errorHandler] maps them, so every error
// answer has the same JSON shape {"error": {"code", "message"}}.
package api
