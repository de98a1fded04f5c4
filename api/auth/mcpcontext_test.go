package auth

import (
	"errors"
	"testing"
	"time"
)

func TestMCPContextTokens(t *testing.T) {
	a := New([]byte("mcp-context-test-secret-0123456789abcdef"), "", "")
	tok, err := a.SignMCPContext(MCPContext{UserID: "alice", SessionID: "s1", Phase: "strategy", StrategyID: "st1"}, "strategy_engine", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	c, err := a.VerifyMCPContext(tok, "strategy_engine")
	if err != nil {
		t.Fatal(err)
	}
	if c.Subject != "alice" || c.SessionID != "s1" || c.Phase != "strategy" || c.StrategyID != "st1" {
		t.Fatalf("claims = %+v", c)
	}
	if _, err := a.VerifyMCPContext(tok, "deployer"); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("token for strategy_engine accepted by deployer: %v", err)
	}
	if _, err := a.Verify(tok); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("an x-mcp-context token was accepted as a bearer token: %v", err)
	}
}
