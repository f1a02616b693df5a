// Cpus: how many CPUs this process may actually use, for sizing thread pools.
//
// std::thread::hardware_concurrency() counts the machine's CPUs, not this process's: a
// service pinned to one core (taskset, a CPU set) or limited by a cgroup quota (a
// container's CPU limit) that starts one I/O thread per machine CPU runs several
// threads on one core, and a thread preempted mid-request delays every connection it
// holds by a whole time slice. That is a latency tail the load never explains.
//
// Contract:
// - UsableCpus() is the number of CPUs in the calling thread's affinity mask, lowered
//   to a cgroup v2 `cpu.max` quota of this process's cgroup rounded up (150000 100000
//   is 2), and at least 1. What cannot be read (no cgroup v2, a mask too large) does
//   not lower it; with nothing readable it is hardware_concurrency(), at least 1.
// - CpusOfQuota parses a `cpu.max` document: none for "max ..." or anything that does
//   not parse. It is total and never throws.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace cincinnati::env {

std::size_t UsableCpus();

// CPUs a cgroup v2 `cpu.max` of "QUOTA PERIOD" allows, rounded up; none for no limit.
std::optional<std::size_t> CpusOfQuota(std::string_view cpu_max);

}  // namespace cincinnati::env
