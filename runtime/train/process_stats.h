// Process memory on CPU: resident set size now and its high-water mark, from /proc/self/status
// (Linux). Reported as mem_alloc/mem_reserved (RSS) and mem_peak (VmHWM) on CPU runs. Any thread.
#pragma once

namespace wb::rt {

double residentGib();      ///< VmRSS in GiB, 0 if unknown
double peakResidentGib();  ///< VmHWM in GiB, 0 if unknown

}  // namespace wb::rt
