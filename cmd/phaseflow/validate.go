package main

import "context"

// runValidate is a placeholder until its owner fills it in.
func runValidate(ctx context.Context, sio stdio, args []string) int {
	_ = ctx
	_ = args
	_, _ = sio.err.Write([]byte("not implemented yet\n"))
	return 2
}
