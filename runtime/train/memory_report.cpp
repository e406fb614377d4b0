// Memory accounting and the out-of-memory report (see memory_report.h).
#include "runtime/train/memory_report.h"

#include "runtime/model/tensor_bytes.h"
#include "runtime/model/torch_compat.h"
#include "runtime/train/gpu_info.h"

#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <regex>
#include <vector>

namespace wb::rt {

namespace {

std::atomic<int64_t> cpuCurrent{0};
std::atomic<int64_t> cpuPeak{0};

void addBytes(int64_t n)
{
    const int64_t now = cpuCurrent.fetch_add(n) + n;
    int64_t peak = cpuPeak.load();
    while (now > peak && !cpuPeak.compare_exchange_weak(peak, now)) {
    }
}

// Each block carries its size in a 64-byte header in front of the data (64 keeps LibTorch's
// alignment), so the context can stay equal to the data pointer as raw_allocate() requires.
constexpr size_t kHeader = 64;

void freeCounted(void* data)
{
    if (!data)
        return;
    char* base = static_cast<char*>(data) - kHeader;
    int64_t bytes = 0;
    std::memcpy(&bytes, base, sizeof bytes);
    cpuCurrent.fetch_sub(bytes);
    c10::free_cpu(base);
}

// LibTorch 2.3 made allocate() non-const and added copy_data().
#if WB_TORCH_AT_LEAST(2, 3)
#define WB_ALLOCATE_QUALIFIER
#else
#define WB_ALLOCATE_QUALIFIER const
#endif

class CountingCpuAllocator final : public c10::Allocator {
public:
    c10::DataPtr allocate(size_t n) WB_ALLOCATE_QUALIFIER override
    {
        if (n == 0)
            return {nullptr, nullptr, &freeCounted, c10::Device(c10::DeviceType::CPU)};
        // c10::alloc_cpu throws "DefaultCPUAllocator: not enough memory" as the default does.
        char* base = static_cast<char*>(c10::alloc_cpu(n + kHeader));
        const int64_t bytes = static_cast<int64_t>(n);
        std::memcpy(base, &bytes, sizeof bytes);
        addBytes(bytes);
        void* data = base + kHeader;
        return {data, data, &freeCounted, c10::Device(c10::DeviceType::CPU)};
    }

    c10::DeleterFnPtr raw_deleter() const override { return &freeCounted; }

    // Not virtual in LibTorch 1.13; a pure virtual since 2.3 (memcpy is the default's behaviour).
    void copy_data(void* dest, const void* src, std::size_t count) const { std::memcpy(dest, src, count); }
};


std::string gib(int64_t bytes)
{
    char text[32];
    std::snprintf(text, sizeof text, "%.2f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
    return text;
}

}  // namespace

void installCpuTensorCounter()
{
    static std::once_flag once;
    std::call_once(once, [] {
        static CountingCpuAllocator counter;
        c10::SetCPUAllocator(&counter, /*priority=*/100);
    });
}

TensorBytes cpuTensorBytes()
{
    return {cpuCurrent.load(), cpuPeak.load()};
}

void resetCpuTensorPeak()
{
    cpuPeak.store(cpuCurrent.load());
}

MemoryConsumers measureConsumers(torch::nn::Module& model, torch::optim::Optimizer* optimizer, torch::Device device,
                                 int64_t momentBytesPerValue)
{
    MemoryConsumers m;
    int64_t gradientsAllocated = 0, trainableValues = 0;
    for (const auto& item : model.named_parameters()) {
        const torch::Tensor& p = item.value();
        m.parameters += tensorBytes(p);
        if (!p.requires_grad())
            continue;
        m.trainable += tensorBytes(p);
        trainableValues += p.numel();
        m.gradients += tensorBytes(p);
        gradientsAllocated += tensorBytes(p.grad());
        const std::string& name = item.key();
        if (name.rfind("vision.", 0) == 0 || name.rfind("projector.", 0) == 0 || name.rfind("deepstack_projectors.", 0) == 0)
            m.visionTrainable += tensorBytes(p);
    }
    m.optimizerProjected = trainableValues * momentBytesPerValue;  // exp_avg + exp_avg_sq in their dtypes
    if (optimizer)
        for (const auto& [key, state] : optimizer->state())
            if (auto* adamw = dynamic_cast<torch::optim::AdamWParamState*>(state.get()))
                m.optimizerState += tensorBytes(adamw->exp_avg()) + tensorBytes(adamw->exp_avg_sq()) + tensorBytes(adamw->max_exp_avg_sq());
    m.allocatedAtPeakKnown = m.parameters + gradientsAllocated + m.optimizerState;
    if (device.is_cuda())
        m.peak = static_cast<int64_t>(readMemory(device).peakGib * 1024.0 * 1024.0 * 1024.0);
    else
        m.peak = cpuTensorBytes().peak;
    return m;
}

std::string outOfMemoryMessage(const MemoryConsumers& m, const core::RunConfig& config, const std::string& device,
                               const std::string& what)
{
    std::string out = "out of memory on " + device + " (" + what + ").";
    out += " Largest consumers: parameters " + gib(m.parameters) + " (" + gib(m.trainable) + " trainable), gradients " +
           gib(m.gradients) + ", optimizer state " +
           (m.optimizerState > 0 ? gib(m.optimizerState) : gib(m.optimizerProjected) + " (allocated at the first step)");
    if (m.peak > 0)
        out += ", activations ~" + gib(m.activations()) + " (estimate: peak " + gib(m.peak) +
               (m.failedRequest > 0 ? " + the failed request " + gib(m.failedRequest) : std::string()) + " minus the above)";
    out += ".";

    // Each knob with the bytes it can remove; ranked by that, ties in the order listed.
    struct Knob {
        int64_t bytes;
        std::string text;
    };
    std::vector<Knob> knobs;
    const auto& r = config.recompute;
    const int mbs = config.train.microBatchSize;
    if (r.granularity != "full")
        knobs.push_back({m.activations(), r.granularity == "none"
                                              ? "activation recompute (recompute.granularity \"selective\" with core_attn, moe_act, or \"full\")"
                                              : "full activation recompute (recompute.granularity \"full\")"});
    if (mbs > 1)
        knobs.push_back({m.activations() / 2, "a smaller micro-batch (train.micro_batch_size " + std::to_string(mbs) + " → " +
                                                  std::to_string(mbs / 2) + ", more accumulation for the same global batch)"});
    if (m.visionTrainable > 0)
        knobs.push_back({m.visionTrainable * 3, "freezing the vision encoder (model.freeze_vision_model, freeze_vision_projection: no gradients, no optimizer state, no vision activations)"});
    const auto& t = config.train;
    const int64_t optimizerBytes = std::max(m.optimizerState, m.optimizerProjected);
    if (t.expAvgDtype != "bf16" || t.expAvgSqDtype != "bf16")  // fp32 → bf16 halves each moment
        knobs.push_back({optimizerBytes / (t.expAvgDtype != t.expAvgSqDtype ? 3 : 2),
                         "bf16 Adam moments (train.exp_avg_dtype and train.exp_avg_sq_dtype \"bf16\": Megatron's "
                         "precision-aware optimizer, math stays fp32)"});
    knobs.push_back({m.gradients + optimizerBytes + m.parameters / 2,
                     "sharding parameters, gradients and optimizer state over GPUs: FSDP (parallel.use_megatron_fsdp) or expert parallelism (parallel.expert_model_parallel_size)"});
    std::stable_sort(knobs.begin(), knobs.end(), [](const Knob& a, const Knob& b) { return a.bytes > b.bytes; });
    out += " Try, most relevant first:";
    for (size_t i = 0; i < knobs.size(); ++i)
        out += " " + std::to_string(i + 1) + ". " + knobs[i].text + (i + 1 < knobs.size() ? ";" : ".");
    return out;
}

int64_t failedRequestBytes(const std::string& what)
{
    std::smatch m;
    if (std::regex_search(what, m, std::regex(R"(allocate (\d+) bytes)")))
        return std::stoll(m[1].str());
    if (std::regex_search(what, m, std::regex(R"(Tried to allocate ([0-9.]+) (B|KiB|MiB|GiB|TiB))"))) {
        const std::string unit = m[2].str();
        const double scale = unit == "TiB" ? 1099511627776.0 : unit == "GiB" ? 1073741824.0 : unit == "MiB" ? 1048576.0
                           : unit == "KiB" ? 1024.0 : 1.0;
        return static_cast<int64_t>(std::stod(m[1].str()) * scale);
    }
    return 0;
}

bool isOutOfMemoryMessage(const std::string& what)
{
    // CUDA: "CUDA out of memory" (c10::OutOfMemoryError); CPU: "DefaultCPUAllocator: not enough
    // memory" (2.x) or "can't allocate memory … Error code 12" (1.13's posix_memalign path).
    for (const char* marker : {"out of memory", "OutOfMemory", "not enough memory", "can't allocate memory",
                               "Cannot allocate memory", "std::bad_alloc"})
        if (what.find(marker) != std::string::npos)
            return true;
    return false;
}

}  // namespace wb::rt
