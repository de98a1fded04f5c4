// Package bench holds what the project's load tools (tools/turnbench, tools/followers)
// share: reading a process's memory and CPU from /proc, and building and signing for the
// phaseflow binary they measure.
package bench

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// RSSKB is a process's resident memory in KiB; 0 when it cannot be read.
func RSSKB(pid int) int64 { return kbField(fmt.Sprintf("/proc/%d/status", pid), "VmRSS:") }

// SlabKB is the kernel's slab memory in KiB (sockets, their files and inodes among it).
func SlabKB() int64 { return kbField("/proc/meminfo", "Slab:") }

// CPU is a process's user and system time; 0 when it cannot be read.
func CPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name, in parentheses, may hold spaces: the fields count from after it.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // clock ticks (USER_HZ, 100 on Linux)
}

// kbField reads a "Key: N kB" line of a /proc file; 0 when it cannot.
func kbField(path, key string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, key); ok {
			kb, _ := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			return kb
		}
	}
	return 0
}
