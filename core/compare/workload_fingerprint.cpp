// Which differences are how loud: a different data source invalidates any throughput comparison
// (Critical). Different work per step — sequence, images, image tokens, frozen modules, model,
// global batch, precision — makes step time incomparable and per-token figures only roughly so
// (Warning). Different micro-batch, world size, layout or device are usually the very thing being
// compared; the figures are per GPU and per effective token, so they are noted, not flagged (Info).
#include "core/compare/workload_fingerprint.h"

#include "core/json_number.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

namespace wb::core {
namespace {

using Json = nlohmann::json;

// Measured per-sample figures are medians of noisy data: closer than this counts as equal.
constexpr double kMeasuredTolerance = 0.10;

const Json& child(const Json& j, const char* key)
{
    static const Json kNull;
    if (!j.is_object())
        return kNull;
    auto it = j.find(key);
    return it == j.end() ? kNull : *it;
}

template <typename T>
T get(const Json& j, const char* key, T fallback)
{
    const Json& v = child(j, key);
    if constexpr (std::is_same_v<T, std::string>)
        return v.is_string() ? v.get<std::string>() : fallback;
    else if constexpr (std::is_same_v<T, bool>)
        return v.is_boolean() ? v.get<bool>() : fallback;
    else if constexpr (std::is_integral_v<T>)
        return static_cast<T>(jsonWholeNumber(v, std::numeric_limits<T>::min(), std::numeric_limits<T>::max()).value_or(fallback));
    else
        return v.is_number() ? v.get<T>() : fallback;
}

std::string modelSummary(const Json& model)
{
    const Json& d = child(model, "decoder");
    const Json& v = child(model, "vision");
    if (!d.is_object())
        return {};
    std::ostringstream s;
    s << "decoder " << get<int>(d, "num_layers", 0) << "L×" << get<int>(d, "hidden_size", 0) << " E"
      << get<int>(d, "num_moe_experts", 0) << " top" << get<int>(d, "moe_router_topk", 0) << " ffn"
      << get<int>(d, "moe_ffn_hidden_size", 0) << " vocab" << get<int>(d, "vocab_size", 0);
    if (v.is_object())
        s << " · vision " << get<int>(v, "num_layers", 0) << "L×" << get<int>(v, "hidden_size", 0) << " patch"
          << get<int>(v, "patch_size", 0) << " merge" << get<int>(v, "spatial_merge_size", 0);
    return s.str();
}

std::string joinValues(const std::vector<std::string>& labels, const std::vector<std::string>& values)
{
    std::string out;
    for (size_t i = 0; i < labels.size(); ++i) {
        if (i > 0)
            out += ", ";
        out += labels[i] + " = " + (values[i].empty() ? std::string("?") : values[i]);
    }
    return out;
}

std::string number(double v)
{
    std::ostringstream s;
    s.precision(4);
    s << v;
    return s.str();
}

bool allEqual(const std::vector<std::string>& values)
{
    return std::adjacent_find(values.begin(), values.end(), std::not_equal_to<>()) == values.end();
}

bool allClose(const std::vector<double>& values, double tolerance)
{
    const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
    if (lo == values.end())
        return true;
    const double scale = std::max(std::abs(*lo), std::abs(*hi));
    return scale == 0.0 || (*hi - *lo) <= tolerance * scale;
}

}  // namespace

const char* severityName(WarningSeverity severity)
{
    switch (severity) {
    case WarningSeverity::Critical: return "critical";
    case WarningSeverity::Warning: return "warning";
    case WarningSeverity::Info: return "info";
    }
    return "warning";
}

WorkloadFingerprint makeFingerprint(const std::string& configJson, const std::optional<MetaRecord>& meta,
                                    const StepSeries& steps, const SteadyWindow& window)
{
    WorkloadFingerprint f;
    const Json config = Json::parse(configJson.begin(), configJson.end(), nullptr, false);
    const Json& train = child(config, "train");
    const Json& data = child(config, "data");
    const Json& model = child(config, "model");
    f.dataSource = get<std::string>(data, "source", "");
    f.seqLength = get<int>(train, "seq_length", 0);
    f.microBatchSize = get<int>(train, "micro_batch_size", 0);
    f.globalBatchSize = get<int>(train, "global_batch_size", 0);
    f.precision = get<std::string>(train, "precision", "");
    f.imagesPerSampleConfigured = get<int>(data, "images_per_sample", 0);
    f.minPixels = get<int64_t>(data, "min_pixels", 0);
    f.maxPixels = get<int64_t>(data, "max_pixels", 0);
    f.mockImageSize = get<int>(data, "mock_image_size", 0);
    if (get<bool>(model, "freeze_vision_model", false))
        f.frozenModules.emplace_back("vision");
    if (get<bool>(model, "freeze_vision_projection", false))
        f.frozenModules.emplace_back("projection");
    if (get<bool>(model, "freeze_language_model", false))
        f.frozenModules.emplace_back("language");
    f.model = modelSummary(model);
    if (meta) {
        // What the runtime says it ran beats what the config asked for.
        if (!meta->dataSource.empty())
            f.dataSource = meta->dataSource;
        f.worldSize = std::max(meta->worldSize, 1);
        f.layout = meta->layout;
        f.device = meta->device;
        if (meta->seqLength > 0)
            f.seqLength = meta->seqLength;
        if (meta->microBatchSize > 0)
            f.microBatchSize = meta->microBatchSize;
        if (meta->globalBatchSize > 0)
            f.globalBatchSize = meta->globalBatchSize;
        if (auto trainer = meta->versions.find("trainer"); trainer != meta->versions.end())
            f.trainer = trainer->second;
        f.tokenCounting = meta->tokenCounting;
        f.runtimeSwitches = switchesText(meta->runtimeSwitches);
        if (meta->tokenCounting == "slots") {
            // An imported Megatron log: its stored config is the workbench's reading of the Bridge
            // fields, whose data section is a default. Only what the files said counts (0 = unknown).
            f.dataSource = meta->dataSource;
            f.imagesPerSampleConfigured = 0;
            f.minPixels = f.maxPixels = 0;
            f.mockImageSize = 0;
        }
    }
    const double samples = std::max(f.globalBatchSize, 1);
    std::vector<double> images, imageTokens, textTokens;
    for (size_t i = window.begin; i < std::min(window.end, steps.size()); ++i) {
        images.push_back(steps.images[i] / samples);
        imageTokens.push_back(steps.imageTokens[i] / samples);
        textTokens.push_back(steps.textTokens[i] / samples);
    }
    f.imagesPerSample = robustStats(std::move(images)).median;
    f.imageTokensPerSample = robustStats(std::move(imageTokens));
    f.textTokensPerSample = robustStats(std::move(textTokens));
    return f;
}

std::vector<CompareWarning> compareWorkloads(const std::vector<std::string>& labels,
                                             const std::vector<WorkloadFingerprint>& fps)
{
    std::vector<CompareWarning> out;
    if (fps.empty())
        return out;
    auto column = [&](const std::function<std::string(const WorkloadFingerprint&)>& field) {
        std::vector<std::string> values;
        for (const auto& f : fps)
            values.push_back(field(f));
        return values;
    };
    auto exact = [&](WarningSeverity severity, const char* code, const std::string& what,
                     const std::string& why, const std::function<std::string(const WorkloadFingerprint&)>& field) {
        const auto values = column(field);
        if (!allEqual(values))
            out.push_back({severity, code, what + " differs (" + joinValues(labels, values) + "): " + why});
    };

    // 1. Data source, first and loudest (decision guide caution 1). A run whose source is unknown
    // (no meta line; an imported log that does not name its dataset) is not called mock or real.
    const auto sources = column([](const auto& f) { return f.dataSource; });
    std::vector<std::string> knownLabels, knownSources, unknownLabels;
    for (size_t i = 0; i < fps.size(); ++i) {
        if (sources[i].empty()) {
            unknownLabels.push_back(labels[i]);
        } else {
            knownLabels.push_back(labels[i]);
            knownSources.push_back(sources[i]);
        }
    }
    if (!knownSources.empty() && !allEqual(knownSources)) {
        out.push_back({WarningSeverity::Critical, "data_source",
                       "MOCK vs REAL data (" + joinValues(knownLabels, knownSources) +
                           "): runs on mock data looked about 2x faster than on real multimodal input. "
                           "Do not draw a throughput conclusion from this comparison."});
    } else if (!knownSources.empty() && knownSources.front() == "mock") {
        out.push_back({WarningSeverity::Warning, "mock_data",
                       std::string(unknownLabels.empty() ? "every run uses" : "the runs whose data is known use") +
                           " MOCK data: the figures say nothing about throughput on real "
                           "multimodal input (mock runs looked about 2x faster)."});
    }
    if (!unknownLabels.empty()) {
        std::string names;
        for (const auto& l : unknownLabels)
            names += (names.empty() ? "" : ", ") + l;
        if (knownSources.empty())
            out.push_back({WarningSeverity::Warning, "data_source_unknown",
                           "the data source (mock or real) of these runs is unknown: no meta line was stored, or an "
                           "imported log's files do not say."});
        else if (allEqual(knownSources))  // known ones agree; the unknown ones may not: as loud as mock vs real
            out.push_back({WarningSeverity::Critical, "data_source",
                           "MOCK or REAL unknown for " + names + " (" + joinValues(knownLabels, knownSources) +
                               "): no meta line was stored, or an imported log's files do not say; mock data "
                               "looked about 2x faster than real, so a throughput difference may be just that."});
    }
    // How tokens are counted: moe-train counts effective tokens, a Megatron log only token slots.
    const auto counting = column([](const auto& f) { return f.tokenCounting == "slots" ? std::string("token slots (padding included)")
                                                                                      : std::string("effective tokens"); });
    if (!allEqual(counting))
        out.push_back({WarningSeverity::Warning, "token_counting",
                       "tokens are counted differently (" + joinValues(labels, counting) +
                           "): a Megatron log gives GBS x seq, padding included, so its tokens/s/GPU is an upper "
                           "bound of the effective rate; compare step time at equal GBS and seq, or TFLOP/s."});
    exact(WarningSeverity::Info, "trainer", "trainer",
          "each reports TFLOP/s/GPU with its own FLOP count (moe-train: DESIGN.md §3.2; Megatron: its "
          "num_floating_point_operations)",
          [](const auto& f) { return f.trainer; });

    // 2. Different work per step (decision guide caution 3).
    const std::string work = "the work per step is not the same, compare per effective token only";
    exact(WarningSeverity::Warning, "seq_length", "sequence length", work,
          [](const auto& f) { return std::to_string(f.seqLength); });
    exact(WarningSeverity::Warning, "global_batch_size", "global batch size", work,
          [](const auto& f) { return std::to_string(f.globalBatchSize); });
    // Configured image fields an imported log does not know (0) are left out of their comparison.
    const auto known = [&](const char* code, const std::string& what,
                           const std::function<std::string(const WorkloadFingerprint&)>& field) {
        std::vector<std::string> ls, vs;
        for (size_t i = 0; i < fps.size(); ++i)
            if (fps[i].tokenCounting != "slots") {
                ls.push_back(labels[i]);
                vs.push_back(field(fps[i]));
            }
        if (!allEqual(vs))
            out.push_back({WarningSeverity::Warning, code, what + " differs (" + joinValues(ls, vs) + "): " + work});
    };
    known("images_per_sample", "images per sample (configured)",
          [](const auto& f) { return std::to_string(f.imagesPerSampleConfigured); });
    // Measured image counts: a Megatron log counts none (token slots), so only the runs that do.
    const auto countedOnly = [&](const std::function<double(const WorkloadFingerprint&)>& field) {
        std::vector<double> values;
        for (const auto& f : fps)
            if (f.tokenCounting != "slots")
                values.push_back(field(f));
        return values;
    };
    if (!allClose(countedOnly([](const auto& f) { return f.imagesPerSample; }), kMeasuredTolerance))
        out.push_back({WarningSeverity::Warning, "images_measured",
                       "images per sample (measured) differ (" +
                           joinValues(labels, column([](const auto& f) { return number(f.imagesPerSample); })) +
                           "): " + work});
    if (!allClose(countedOnly([](const auto& f) { return f.imageTokensPerSample.median; }), kMeasuredTolerance))
        out.push_back({WarningSeverity::Warning, "image_tokens",
                       "image tokens per sample differ (median " +
                           joinValues(labels, column([](const auto& f) {
                               return number(f.imageTokensPerSample.median) + " [p10 " +
                                      number(f.imageTokensPerSample.p10) + ", p90 " +
                                      number(f.imageTokensPerSample.p90) + "]";
                           })) +
                           "): image resolution differs, and with it the vision encoder's share of the step"});
    known("pixel_budget", "image pixel budget (min..max pixels)",
          [](const auto& f) { return std::to_string(f.minPixels) + ".." + std::to_string(f.maxPixels); });
    exact(WarningSeverity::Warning, "frozen_modules", "frozen modules",
          "frozen modules skip their backward pass, so the FLOPs per token differ",
          [](const auto& f) {
              std::string s;
              for (const auto& m : f.frozenModules)
                  s += (s.empty() ? "" : "+") + m;
              return s.empty() ? std::string("none") : s;
          });
    exact(WarningSeverity::Warning, "model", "the model", "these runs do not train the same network",
          [](const auto& f) { return f.model; });
    exact(WarningSeverity::Warning, "precision", "precision", "peak rates and MFU differ by precision",
          [](const auto& f) { return f.precision; });

    // 3. The usual subjects of a comparison: noted so that nobody reads them as identical.
    const std::string perGpu = "figures are per GPU and per effective token, so they stay comparable";
    exact(WarningSeverity::Info, "world_size", "world size", perGpu,
          [](const auto& f) { return std::to_string(f.worldSize); });
    exact(WarningSeverity::Info, "micro_batch_size", "micro batch size", perGpu,
          [](const auto& f) { return std::to_string(f.microBatchSize); });
    exact(WarningSeverity::Info, "layout", "parallel layout", perGpu, [](const auto& f) { return f.layout; });
    exact(WarningSeverity::Info, "device", "device", "peak rates differ; compare MFU across devices",
          [](const auto& f) { return f.device; });
    exact(WarningSeverity::Info, "runtime_switches", "moe-train's environment switches",
          "the same work through other kernel paths or overlaps (set in the environment, not the config)",
          [](const auto& f) { return f.runtimeSwitches.empty() ? std::string("none") : f.runtimeSwitches; });

    std::stable_sort(out.begin(), out.end(),
                     [](const auto& a, const auto& b) { return a.severity < b.severity; });
    return out;
}

}  // namespace wb::core
