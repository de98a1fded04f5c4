package main

import "context"

// runMockUpstream is a placeholder until its owner fills it in.
func runMockUpstream(ctx context.Context, sio stdio, args []string) int {
	_ = ctx
	_ = args
	_, _ = sio.err.Write([]byte("not implemented yet\n"))
	return 2
}
