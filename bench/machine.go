package main

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTick is USER_HZ, the unit of /proc CPU times: 100 on Linux.
const clockTick = 10 * time.Millisecond

// cpuSnap is the machine's busy CPU time and the share of it that the
// benchmark itself accounts for: this process, its redis-server and its
// redis-benchmark runs. What is left is other processes', which the report
// states so that a run on a busy machine shows it.
type cpuSnap struct {
	at       time.Time
	busy     time.Duration // all CPUs, from /proc/stat
	self     time.Duration // this process
	children time.Duration // waited-for children: the redis-benchmark runs
	server   time.Duration // the redis-server process
}

func takeCPUSnap(serverPid int) cpuSnap {
	s := cpuSnap{at: time.Now(), busy: machineBusy(), self: processCPU(), server: pidCPU(serverPid)}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru) == nil {
		s.children = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return s
}

// others returns the CPU time other processes used between a and b.
func others(a, b cpuSnap) time.Duration {
	d := (b.busy - a.busy) - (b.self - a.self) - (b.children - a.children) - (b.server - a.server)
	return max(d, 0)
}

// machineBusy is the total non-idle CPU time of the machine.
func machineBusy() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0
	}
	var total int64
	for i, v := range f[1:] {
		n, _ := strconv.ParseInt(v, 10, 64)
		// Not busy here: idle, iowait, steal (another guest's), and guest
		// times, which are already in user and nice.
		if i == 3 || i == 4 || i >= 7 {
			continue
		}
		total += n
	}
	return time.Duration(total) * clockTick
}

// pidCPU is the user+system time of process pid.
func pidCPU(pid int) time.Duration {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command name may hold spaces: fields count from the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	// After ')': state is field 3 of stat, utime 14, stime 15.
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * clockTick
}

// loadAvg is the first field of /proc/loadavg.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "unknown"
	}
	return f[0]
}
