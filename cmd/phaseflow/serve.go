package main

import "context"

// runServe is a placeholder until its owner fills it in.
func runServe(ctx context.Context, sio stdio, args []string) int {
	_ = ctx
	_ = args
	_, _ = sio.err.Write([]byte("not implemented yet\n"))
	return 2
}
