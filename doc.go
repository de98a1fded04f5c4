// Package phaseflow is the root of the Phaseflow module: a streaming chat orchestrator that
// sits between chat clients and an LLM speaking the OpenAI Responses API. The binary lives in
// cmd/phaseflow; the folders below the root are its architecture (see README.md).
package phaseflow
