// Process memory from /proc (see process_stats.h).
#include "runtime/train/process_stats.h"

#include <fstream>
#include <string>

namespace wb::rt {

static double statusFieldGib(const std::string& key)
{
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind(key, 0) == 0)
            return std::stod(line.substr(key.size())) / (1024.0 * 1024.0);  // value is in kB
    }
    return 0.0;
}

double residentGib() { return statusFieldGib("VmRSS:"); }
double peakResidentGib() { return statusFieldGib("VmHWM:"); }

}  // namespace wb::rt
