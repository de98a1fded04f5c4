//go:build unix

package main

import "syscall"

// raiseFileLimit raises the process's file limit to its hard maximum (Go does so too at
// start on Linux; this makes it so everywhere and tells what it is) and returns it, 0
// when it cannot be read.
func raiseFileLimit() uint64 {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0
	}
	if r.Cur < r.Max {
		raised := syscall.Rlimit{Cur: r.Max, Max: r.Max}
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised) == nil {
			r = raised
		}
	}
	return r.Cur
}
