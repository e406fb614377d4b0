// Catalog loading. Model entries are validated by RunConfig's own parser (wrapped as a config with
// only a "model" section), so a catalog model and a runnable config can never disagree about field
// names or ranges.
#include "core/planner/catalog.h"

#include "core/model_flops.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace wb::core::planner {
namespace {

using Json = nlohmann::json;

std::string lower(std::string s)
{
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return s;
}

std::string joinNames(const std::vector<std::string>& names)
{
    std::string out;
    for (const std::string& n : names)
        out += (out.empty() ? "" : ", ") + n;
    return out;
}

template <typename T>
void upsert(std::vector<T>& list, T item)
{
    auto it = std::find_if(list.begin(), list.end(), [&](const T& x) { return x.name == item.name; });
    if (it != list.end())
        *it = std::move(item);
    else
        list.push_back(std::move(item));
}

std::string textField(const Json& entry, const char* key)
{
    auto it = entry.find(key);
    return it != entry.end() && it->is_string() ? it->get<std::string>() : std::string();
}

void parseModel(const Json& entry, const std::string& where, std::vector<ModelSpec>& out, std::vector<std::string>& errors)
{
    ModelSpec spec;
    spec.name = lower(textField(entry, "name"));
    if (spec.name.empty()) {
        errors.push_back(where + ": a model entry needs a \"name\"");
        return;
    }
    spec.displayName = textField(entry, "display_name");
    if (spec.displayName.empty())
        spec.displayName = spec.name;
    spec.family = textField(entry, "family");
    spec.notes = textField(entry, "notes");
    auto model = entry.find("model");
    if (model == entry.end() || !model->is_object()) {
        errors.push_back(where + " (" + spec.name + "): needs a \"model\" object with \"vision\" and \"decoder\" in RunConfig field names");
        return;
    }
    // RunConfig's parser checks names, types, ranges and model consistency; mock data keeps the
    // data section from asking for a manifest.
    Json wrapped = {{"model", *model}, {"data", {{"source", "mock"}}}};
    RunConfigParse parsed = parseRunConfig(wrapped.dump());
    if (!parsed.ok()) {
        for (const ConfigProblem& p : parsed.problems)
            errors.push_back(where + " (" + spec.name + "): " + p.toString());
        return;
    }
    spec.model = parsed.config.model;
    upsert(out, std::move(spec));
}

void parseHardware(const Json& entry, const std::string& where, std::vector<HardwareSpec>& out, std::vector<std::string>& errors)
{
    HardwareSpec hw;
    hw.name = lower(textField(entry, "name"));
    if (hw.name.empty()) {
        errors.push_back(where + ": a hardware entry needs a \"name\"");
        return;
    }
    hw.displayName = textField(entry, "display_name");
    if (hw.displayName.empty())
        hw.displayName = hw.name;
    hw.sm = textField(entry, "sm");
    hw.notes = textField(entry, "notes");
    const size_t before = errors.size();
    auto number = [&](const char* key, double& value, double min, double max) {
        auto it = entry.find(key);
        if (it == entry.end() || !it->is_number()) {
            errors.push_back(where + " (" + hw.name + "): \"" + key + "\" must be a number");
            return;
        }
        value = it->get<double>();
        if (value < min || value > max)
            errors.push_back(where + " (" + hw.name + "): \"" + key + "\" = " + it->dump() + " is outside [" +
                             std::to_string(min) + ", " + std::to_string(max) + "]");
    };
    double domain = 0, perNode = 0;
    number("peak_dense_bf16_tflops", hw.peakDenseBf16Tflops, 1, 1e6);
    number("hbm_gib", hw.hbmGib, 1, 1e5);
    number("hbm_tb_s", hw.hbmTbPerS, 0.1, 1e3);
    number("nvlink_domain_size", domain, 1, 1e5);
    number("gpus_per_node", perNode, 1, 1e3);
    number("nvlink_gb_s", hw.nvlinkGbPerS, 1, 1e5);
    number("network_gb_s", hw.networkGbPerS, 0.1, 1e5);
    hw.nvlinkDomainSize = int(domain);
    hw.gpusPerNode = int(perNode);
    if (hw.sm.empty() || hw.smMajor() <= 0)
        errors.push_back(where + " (" + hw.name + "): \"sm\" must be a compute capability such as \"9.0\"");
    if (errors.size() == before)
        upsert(out, std::move(hw));
}

std::string shortNumber(double v)
{
    std::ostringstream out;
    out << v;
    return out.str();
}

// One direction of an attention kernel: {"block": [M, N], "ns_per_tile", "ns_per_cta",
// "ns_per_token_head"}; false when a field is missing or out of range.
bool parseAttentionPass(const Json& kernel, const char* key, AttentionPass& pass)
{
    auto it = kernel.find(key);
    if (it == kernel.end() || !it->is_object())
        return false;
    const Json& p = *it;
    auto block = p.find("block");
    if (block == p.end() || !block->is_array() || block->size() != 2)
        return false;
    for (const Json& rows : *block)
        if (!rows.is_number_integer() || rows.get<int>() < 16 || rows.get<int>() > 1024)
            return false;
    auto rate = [&](const char* field, double& value) {
        auto f = p.find(field);
        if (f == p.end() || !f->is_number() || !(f->get<double>() >= 0) || f->get<double>() > 1e6)
            return false;
        value = f->get<double>();
        return true;
    };
    if (!rate("ns_per_tile", pass.nsPerTile) || !rate("ns_per_cta", pass.nsPerCta) ||
        !rate("ns_per_token_head", pass.nsPerTokenHead) || pass.nsPerTile <= 0)
        return false;
    pass.blockM = (*block)[0].get<int>();
    pass.blockN = (*block)[1].get<int>();
    return true;
}

// A "runtime_profiles" entry: {"runtime": "moe-train", "hardware": "h200", "source": "...",
// "cast_gb_s", "optimizer_gb_s", "reduce_gb_s", "step_gap_ms", and optionally the collectives:
// "allreduce_gb_s", "shard_gb_s", "alltoall_gb_s", "ep_sync_ms", "collectives_source", and the
// attention kernels: "attention", "attention_source"}; a later entry for the same
// runtime and hardware replaces an earlier one.
void parseRuntimeProfile(const Json& entry, const std::string& where, std::vector<RuntimeProfile>& out,
                         std::vector<std::string>& errors)
{
    RuntimeProfile p;
    p.runtime = lower(textField(entry, "runtime"));
    p.hardware = lower(textField(entry, "hardware"));
    p.rates.source = textField(entry, "source");
    const std::string name = p.runtime + " on " + p.hardware;
    if (p.runtime.empty() || p.hardware.empty() || p.rates.source.empty()) {
        errors.push_back(where + ": a runtime profile needs \"runtime\", \"hardware\" and \"source\" (where it was measured)");
        return;
    }
    const size_t before = errors.size();
    auto number = [&](const char* key, double& value, double min, double max) {
        auto it = entry.find(key);
        if (it == entry.end() || !it->is_number() || it->get<double>() < min || it->get<double>() > max)
            errors.push_back(where + " (" + name + "): \"" + key + "\" must be a number in [" + shortNumber(min) + ", " +
                             shortNumber(max) + "]");
        else
            value = it->get<double>();
    };
    number("cast_gb_s", p.rates.castGbPerS, 1, 1e5);
    number("optimizer_gb_s", p.rates.optimizerGbPerS, 1, 1e5);
    number("reduce_gb_s", p.rates.reduceGbPerS, 1, 1e5);
    number("step_gap_ms", p.rates.stepGapMs, 0, 1e4);
    // Optional: moe-train's collectives (measured on several GPUs), with their own source.
    auto optionalNumber = [&](const char* key, double& value, double min, double max) {
        if (entry.find(key) != entry.end())
            number(key, value, min, max);
    };
    optionalNumber("copy_gb_s", p.rates.copyGbPerS, 1, 1e5);
    optionalNumber("allreduce_gb_s", p.rates.allreduceGbPerS, 1, 1e5);
    optionalNumber("shard_gb_s", p.rates.shardGbPerS, 1, 1e5);
    optionalNumber("alltoall_gb_s", p.rates.alltoallGbPerS, 1, 1e5);
    optionalNumber("ep_sync_ms", p.rates.epSyncMs, 0, 1e3);
    const bool anyCollective = p.rates.allreduceGbPerS > 0 || p.rates.shardGbPerS > 0 || p.rates.alltoallGbPerS > 0 ||
                               entry.find("ep_sync_ms") != entry.end();
    p.rates.collectivesSource = textField(entry, "collectives_source");
    if (anyCollective && p.rates.collectivesSource.empty())
        errors.push_back(where + " (" + name + "): collective rates need \"collectives_source\" (where they were measured)");
    // Optional: "attention": [{"head_dim", "causal", "fwd": {"block": [M, N], "ns_per_tile",
    // "ns_per_cta", "ns_per_token_head"}, "bwd": {...}}], with "attention_source".
    if (auto att = entry.find("attention"); att != entry.end()) {
        if (!att->is_array())
            errors.push_back(where + " (" + name + "): \"attention\" must be an array of kernels");
        else
            for (size_t i = 0; i < att->size(); ++i) {
                const Json& k = (*att)[i];
                const std::string at = where + " (" + name + ") attention[" + std::to_string(i) + "]";
                AttentionKernelRate rate;
                auto headDim = k.find("head_dim");
                auto causal = k.find("causal");
                if (!k.is_object() || headDim == k.end() || !headDim->is_number_integer() || headDim->get<int>() < 1 ||
                    headDim->get<int>() > 1024 || causal == k.end() || !causal->is_boolean()) {
                    errors.push_back(at + ": needs \"head_dim\" (a whole number in [1, 1024]) and \"causal\" (true or false)");
                    continue;
                }
                rate.headDim = headDim->get<int>();
                rate.causal = causal->get<bool>();
                bool ok = true;
                for (auto [key, pass] : {std::pair{"fwd", &rate.forward}, std::pair{"bwd", &rate.backward}})
                    if (!parseAttentionPass(k, key, *pass)) {
                        errors.push_back(at + ": \"" + key + "\" needs \"block\" ([query rows, key rows], each in [16, 1024]) "
                                         "and \"ns_per_tile\" (> 0), \"ns_per_cta\", \"ns_per_token_head\" (each in [0, 1e6])");
                        ok = false;
                    }
                if (!ok)
                    continue;
                p.rates.attention.push_back(rate);
            }
        p.rates.attentionSource = textField(entry, "attention_source");
        if (p.rates.attentionSource.empty())
            errors.push_back(where + " (" + name + "): \"attention\" needs \"attention_source\" (where it was measured)");
    }
    if (errors.size() != before)
        return;
    for (RuntimeProfile& existing : out)
        if (existing.runtime == p.runtime && existing.hardware == p.hardware) {
            existing = std::move(p);
            return;
        }
    out.push_back(std::move(p));
}

}  // namespace

const AttentionKernelRate* RuntimeRates::attentionKernel(int headDim, bool causal) const
{
    // FA2 compiles head dimensions in buckets of 32 (flash_api: round up to 32, 64, 96, ...): the
    // kernel that runs d is the bucket's, whatever d was measured with inside it.
    auto bucket = [](int d) { return (d + 31) / 32; };
    for (const AttentionKernelRate& k : attention)
        if (k.causal == causal && bucket(k.headDim) == bucket(headDim))
            return &k;
    return nullptr;
}

RuntimeRates Catalog::runtimeRates(const std::string& runtime, const std::string& hardware) const
{
    for (const RuntimeProfile& p : m_runtimeProfiles)
        if (p.runtime == lower(runtime) && p.hardware == lower(hardware))
            return p.rates;
    return {};
}

int HardwareSpec::smMajor() const
{
    try {
        return std::stoi(sm);
    } catch (...) {
        return 0;
    }
}

Result<void> Catalog::addJson(const std::string& text, const std::string& context)
{
    Json root = Json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (root.is_discarded() || !root.is_object())
        return makeError(ErrorCode::Corrupt, "not a JSON object; a catalog file is {\"models\": [...], \"hardware\": [...]}", context);
    auto models = root.find("models");
    auto hardware = root.find("hardware");
    auto profiles = root.find("runtime_profiles");
    if (models == root.end() && hardware == root.end() && profiles == root.end())
        return makeError(ErrorCode::InvalidArgument,
                         "has none of \"models\", \"hardware\" or \"runtime_profiles\"; nothing to load", context);
    std::vector<std::string> errors;
    std::vector<ModelSpec> newModels = m_models;
    std::vector<HardwareSpec> newHardware = m_hardware;
    std::vector<RuntimeProfile> newProfiles = m_runtimeProfiles;
    if (profiles != root.end()) {
        if (!profiles->is_array())
            errors.push_back(context + ": \"runtime_profiles\" must be an array");
        else
            for (size_t i = 0; i < profiles->size(); ++i)
                parseRuntimeProfile((*profiles)[i], context + " runtime_profiles[" + std::to_string(i) + "]", newProfiles,
                                    errors);
    }
    if (models != root.end()) {
        if (!models->is_array())
            errors.push_back(context + ": \"models\" must be an array");
        else
            for (size_t i = 0; i < models->size(); ++i)
                parseModel((*models)[i], context + " models[" + std::to_string(i) + "]", newModels, errors);
    }
    if (hardware != root.end()) {
        if (!hardware->is_array())
            errors.push_back(context + ": \"hardware\" must be an array");
        else
            for (size_t i = 0; i < hardware->size(); ++i)
                parseHardware((*hardware)[i], context + " hardware[" + std::to_string(i) + "]", newHardware, errors);
    }
    if (!errors.empty()) {
        std::string message;
        for (const std::string& e : errors)
            message += (message.empty() ? "" : "\n") + e;
        return makeError(ErrorCode::InvalidArgument, message, context);
    }
    m_models = std::move(newModels);
    m_hardware = std::move(newHardware);
    m_runtimeProfiles = std::move(newProfiles);
    return {};
}

Result<void> Catalog::addFile(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return makeError(ErrorCode::NotFound, "cannot open the catalog file; check the path", path);
    std::ostringstream text;
    text << in.rdbuf();
    return addJson(text.str(), path);
}

Result<void> Catalog::addDirectory(const std::string& directory)
{
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::is_directory(directory, ec))
        return makeError(ErrorCode::NotFound, "is not a directory of catalog files", directory);
    std::vector<std::string> files;
    for (const auto& entry : fs::directory_iterator(directory, ec))
        if (entry.is_regular_file() && entry.path().extension() == ".json")
            files.push_back(entry.path().string());
    std::sort(files.begin(), files.end());  // deterministic override order
    for (const std::string& f : files)
        if (Result<void> r = addFile(f); !r)
            return r;
    return {};
}

Result<ModelSpec> Catalog::model(const std::string& name) const
{
    const std::string key = lower(name);
    for (const ModelSpec& m : m_models)
        if (m.name == key)
            return m;
    return makeError(ErrorCode::NotFound, "unknown model \"" + name + "\"; known models: " + joinNames(modelNames()));
}

Result<HardwareSpec> Catalog::hardware(const std::string& name) const
{
    const std::string key = lower(name);
    for (const HardwareSpec& h : m_hardware)
        if (h.name == key)
            return h;
    return makeError(ErrorCode::NotFound, "unknown hardware \"" + name + "\"; known hardware: " + joinNames(hardwareNames()));
}

std::vector<std::string> Catalog::modelNames() const
{
    std::vector<std::string> out;
    for (const ModelSpec& m : m_models)
        out.push_back(m.name);
    return out;
}

std::vector<std::string> Catalog::hardwareNames() const
{
    std::vector<std::string> out;
    for (const HardwareSpec& h : m_hardware)
        out.push_back(h.name);
    return out;
}

std::string builtinCatalogDir(const std::string& resourceRoot)
{
    return (std::filesystem::path(resourceRoot) / "resources" / "catalog").string();
}

Result<Catalog> loadCatalog(const std::string& builtinDir, const std::string& userDir)
{
    Catalog catalog;
    if (Result<void> r = catalog.addDirectory(builtinDir); !r)
        return r.error();
    std::error_code ec;
    if (!userDir.empty() && std::filesystem::is_directory(userDir, ec))
        if (Result<void> r = catalog.addDirectory(userDir); !r)
            return r.error();
    return catalog;
}

// --- parameter counts ------------------------------------------------------------------------

namespace {

// Softmax attention with QK-norm (and, with attention_output_gate, a gate of q's width in linear_qkv).
double softmaxAttentionParams(const DecoderConfig& d)
{
    const double h = d.hiddenSize;
    const double q = double(d.numAttentionHeads) * d.kvChannels;
    const double kv = double(d.numQueryGroups) * d.kvChannels;
    const double gate = d.attentionOutputGate ? q : 0.0;
    return h * (q + 2 * kv + gate) + q * h + 2.0 * d.kvChannels;  // QKV (+gate), output, QK-norm
}

// Gated DeltaNet (Megatron-Core's GatedDeltaNet): in_proj h → q, k, v, z and the b, a gates; the
// depthwise causal conv over q, k, v; A_log and dt_bias per value head; the gated RMSNorm of the
// value head width; out_proj v → h.
double gatedDeltaNetParams(const DecoderConfig& d)
{
    const double h = d.hiddenSize;
    const GatedDeltaNetWidths w = gatedDeltaNetWidths(d);
    return h * w.inProj + d.linearConvKernelDim * w.conv + 2.0 * d.linearNumValueHeads + d.linearValueHeadDim + w.v * h;
}

// What every layer has besides its token mixer: two RMSNorms, the router, the shared expert.
double layerCommonParams(const DecoderConfig& d)
{
    const double h = d.hiddenSize;
    const double shared = 3.0 * h * d.moeSharedExpertFfnHiddenSize + (d.moeSharedExpertGate ? h : 0.0);
    return 2 * h + h * d.numMoeExperts + shared;
}

}  // namespace

double decoderLayerDenseParams(const DecoderConfig& d)
{
    const double layers = std::max(1, d.numLayers);
    const double linear = d.linearAttentionLayers(d.numLayers);
    const double mixer = (linear * gatedDeltaNetParams(d) + (layers - linear) * softmaxAttentionParams(d)) / layers;
    return mixer + layerCommonParams(d);
}

double mtpDenseParams(const DecoderConfig& d)
{
    // Per MTP layer (Megatron's MultiTokenPredictionLayer): the enorm and hnorm, the eh_proj 2h → h,
    // one decoder layer with softmax attention, and its final norm; embedding and output layer shared.
    const double h = d.hiddenSize;
    return d.mtpNumLayers * (3.0 * h + 2.0 * h * h + softmaxAttentionParams(d) + layerCommonParams(d));
}

double expertParams(const DecoderConfig& d)
{
    return 3.0 * d.hiddenSize * d.moeFfnHiddenSize;
}

double ParameterCounts::active(const DecoderConfig& d) const
{
    return total() - decoderExperts + decoderExperts * double(d.moeRouterTopk) / d.numMoeExperts;
}

ParameterCounts countParameters(const ModelConfig& model)
{
    const VisionConfig& v = model.vision;
    const DecoderConfig& d = model.decoder;
    ParameterCounts c;
    if (v.numLayers > 0) {
        const double hv = v.hiddenSize;
        const double patch = double(v.inChannels) * v.temporalPatchSize * v.patchSize * v.patchSize * hv + hv;
        // Learned position embedding: Qwen3-VL has 2304 (48×48) positions, interpolated per image.
        const double position = 2304.0 * hv;
        const double block = 4 * hv * hv + 4 * hv + 2 * hv * v.ffnHiddenSize + v.ffnHiddenSize + hv + 4 * hv;
        c.visionBlocks = v.numLayers * block;
        c.visionEncoder = patch + position + c.visionBlocks;
        const double merged = hv * v.spatialMergeSize * v.spatialMergeSize;
        const double merger = 2 * merged + merged * merged + merged + merged * d.hiddenSize + d.hiddenSize;
        c.projector = merger * double(1 + v.deepstackLayers.size());
    }
    c.decoderDense = d.numLayers * decoderLayerDenseParams(d) + d.hiddenSize + mtpDenseParams(d);  // + final norm
    c.decoderExperts = double(d.numLayers + d.mtpNumLayers) * d.numMoeExperts * expertParams(d);
    c.embedding = double(d.vocabSize) * d.hiddenSize;
    c.outputLayer = double(d.vocabSize) * d.hiddenSize;
    return c;
}

}  // namespace wb::core::planner
