// Catalogs of models and hardware, loaded from data files (resources/catalog/*.json, plus any
// user files). A model entry's "model" object uses RunConfig's field names, so a ModelSpec carries
// a ready ModelConfig. Loading is pure (no global state); a loaded Catalog is immutable and may be
// read from any thread.
#pragma once

#include "core/result.h"
#include "core/run_config.h"

#include <string>
#include <vector>

namespace wb::core::planner {

struct ModelSpec {
    std::string name;         ///< lookup key, lower case ("qwen3-vl-30b-a3b")
    std::string displayName;
    std::string family;
    std::string notes;        ///< sources and which numbers are assumptions
    ModelConfig model;
};

struct HardwareSpec {
    std::string name;         ///< lookup key ("gb200")
    std::string displayName;
    std::string sm;           ///< compute capability, "9.0", "10.0"
    double peakDenseBf16Tflops = 0;  ///< per GPU, used for MFU
    double hbmGib = 0;               ///< usable device memory per GPU, GiB
    double hbmTbPerS = 0;            ///< HBM bandwidth, TB/s
    int nvlinkDomainSize = 8;        ///< GPUs that reach each other over NVLink
    int gpusPerNode = 8;
    double nvlinkGbPerS = 0;         ///< per GPU, per direction, GB/s
    double networkGbPerS = 0;        ///< scale-out per GPU, per direction, GB/s
    std::string notes;

    int smMajor() const;
};

/// One direction of a flash-attention kernel as moe-train runs it (varlen, one segment per packed
/// sample or image): time = nsPerTile·tiles + nsPerCta·CTAs + nsPerTokenHead·tokens·heads, with
/// tiles and CTAs counted from the kernel's block sizes (benchmarks/attention_kernels.py).
struct AttentionPass {
    int blockM = 0, blockN = 0;  ///< query × key rows of one tile
    double nsPerTile = 0, nsPerCta = 0, nsPerTokenHead = 0;
};

/// A measured attention kernel: FA2 for this head dimension (FA2 runs d in buckets of 32: d 72 on
/// its d 96 kernel) and mask, forward and backward (the backward of the aten op, its GQA
/// reduction and FA2's pre/post passes included).
struct AttentionKernelRate {
    int headDim = 0;
    bool causal = true;
    AttentionPass forward, backward;
};

/// The measured rates of moe-train's own memory-bound passes on one kind of GPU (the
/// "runtime_profiles" section of resources/catalog/*.json, each entry with its source). The
/// throughput model uses them when it predicts moe-train (throughput_model.h TrainingRuntime).
struct RuntimeRates {
    double castGbPerS = 0;       ///< fp32 ↔ bf16 casts of weights and gradients, bytes read + written
    double optimizerGbPerS = 0;  ///< the fused AdamW pass, bytes read + written
    double reduceGbPerS = 0;     ///< the gradient-norm pass (reads)
    double stepGapMs = 0;        ///< GPU idle per step (the step's synchronize, the first micro-batch's upload)
    double copyGbPerS = 0;       ///< plain device copies (ATen copy_), bytes read + written; optional (0: assumed)
    std::string source;          ///< where they were measured; empty = not measured (assumed)
    // moe-train's collectives between GPUs of one NVLink domain, as bus bandwidth (bytes each rank
    // sends: 2(n−1)/n·S for an allreduce of S bytes, (n−1)/n·S for a reduce-scatter or all-gather,
    // (n−1)/n of the dispatched rows for the EP all-to-all); 0 = not measured (assumed fractions
    // of the NVLink bandwidth). Optional in the profile.
    double allreduceGbPerS = 0;  ///< DP gradient allreduce (NCCL, bucketed)
    double shardGbPerS = 0;      ///< FSDP reduce-scatter / all-gather, with the flat-buffer copies around them
    double alltoallGbPerS = 0;   ///< EP dispatch and combine
    double epSyncMs = 0;         ///< per MoE layer and forward: the host waits for the routed counts
    std::string collectivesSource;  ///< where those were measured
    /// moe-train's flash-attention kernels on this GPU (optional): with one for the head
    /// dimension and mask, attention is predicted tile by tile instead of as FLOPs at a fraction
    /// of peak.
    std::vector<AttentionKernelRate> attention;
    std::string attentionSource;  ///< where those were measured
    /// The kernel that runs head dimension `headDim` with this mask; null when none was measured.
    const AttentionKernelRate* attentionKernel(int headDim, bool causal) const;
};

struct RuntimeProfile {
    std::string runtime;   ///< "moe-train"
    std::string hardware;  ///< a hardware entry's name
    RuntimeRates rates;
};

class Catalog {
public:
    /// Reads every *.json file of `directory` (models and/or hardware sections). Entries of a later
    /// file replace earlier ones with the same name, so user files can override the built-ins.
    Result<void> addDirectory(const std::string& directory);
    /// Reads one file: an object with "models": [...], "hardware": [...] and/or
    /// "runtime_profiles": [...].
    Result<void> addFile(const std::string& path);
    /// Parses one file's text; `context` names it in errors. Every bad entry is reported at once.
    Result<void> addJson(const std::string& text, const std::string& context);

    /// Case-insensitive lookup; the error lists the known names.
    Result<ModelSpec> model(const std::string& name) const;
    Result<HardwareSpec> hardware(const std::string& name) const;

    /// The measured rates of `runtime` on `hardware`; all zero (source empty) when none is listed.
    RuntimeRates runtimeRates(const std::string& runtime, const std::string& hardware) const;
    const std::vector<RuntimeProfile>& runtimeProfiles() const { return m_runtimeProfiles; }

    std::vector<std::string> modelNames() const;
    std::vector<std::string> hardwareNames() const;
    const std::vector<ModelSpec>& models() const { return m_models; }
    const std::vector<HardwareSpec>& hardwareList() const { return m_hardware; }

private:
    std::vector<ModelSpec> m_models;
    std::vector<HardwareSpec> m_hardware;
    std::vector<RuntimeProfile> m_runtimeProfiles;
};

/// The built-in catalog directory (<source or install dir>/resources/catalog), given the root.
std::string builtinCatalogDir(const std::string& resourceRoot);

/// Loads the built-in catalog from `builtinDir`, then every file of `userDir` if it is non-empty
/// and exists.
Result<Catalog> loadCatalog(const std::string& builtinDir, const std::string& userDir = {});

/// Parameter counts of a model (not per rank), for the memory model and the report.
struct ParameterCounts {
    double visionEncoder = 0;   ///< patch embedding, position embedding, blocks
    double visionBlocks = 0;    ///< of those, the blocks (moe-train's FSDP units)
    double projector = 0;       ///< main merger + one merger per deepstack layer
    double decoderDense = 0;    ///< attention, norms, routers of all decoder layers
    double decoderExperts = 0;  ///< routed expert weights of all layers
    double embedding = 0;       ///< input embedding
    double outputLayer = 0;     ///< untied output projection
    double total() const { return visionEncoder + projector + decoderDense + decoderExperts + embedding + outputLayer; }
    double active(const DecoderConfig& d) const;  ///< with top-k of the experts
};

/// Per decoder layer: non-expert parameters (attention with QK-norm, two RMSNorms, router, the
/// shared expert). For a hybrid decoder the mean over its gated DeltaNet and softmax layers (the
/// planner splits layers over stages by count; a stage's mix differs from the mean by ≤ 1 layer's).
double decoderLayerDenseParams(const DecoderConfig& d);
/// The MTP layers' own non-expert parameters (on the last pipeline stage; they share the embedding
/// and the output layer). Their routed experts are numMoeExperts × expertParams each.
double mtpDenseParams(const DecoderConfig& d);
/// Per decoder layer: one routed expert (SwiGLU gate, up, down).
double expertParams(const DecoderConfig& d);
ParameterCounts countParameters(const ModelConfig& model);

}  // namespace wb::core::planner
