package main

import "context"

// runToken is a placeholder until its owner fills it in.
func runToken(ctx context.Context, sio stdio, args []string) int {
	_ = ctx
	_ = args
	_, _ = sio.err.Write([]byte("not implemented yet\n"))
	return 2
}
