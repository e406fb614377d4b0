#include "core/compare/run_comparison.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <limits>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

namespace wb::core {
namespace {

using OrderedJson = nlohmann::ordered_json;

OrderedJson finiteOrNull(double v)
{
    return std::isfinite(v) ? OrderedJson(v) : OrderedJson(nullptr);
}

OrderedJson statsJson(const RobustStats& s)
{
    if (!s.valid())
        return nullptr;
    return OrderedJson{{"median", finiteOrNull(s.median)}, {"p10", finiteOrNull(s.p10)},
                       {"p90", finiteOrNull(s.p90)},       {"spread", finiteOrNull(s.spread)},
                       {"count", s.count}};
}

OrderedJson predictionJson(const PredictionCheck& check)
{
    const RunPrediction& p = check.prediction;
    OrderedJson figures = OrderedJson::object();
    for (const auto& row : check.rows)
        figures[row.key] = {{"predicted", finiteOrNull(row.predicted)},
                            {"measured", finiteOrNull(row.measured)},
                            {"unit", row.unit},
                            {"error_pct", row.errorPct ? OrderedJson(*row.errorPct) : OrderedJson(nullptr)}};
    return OrderedJson{{"source", p.source},           {"hardware", p.hardware},
                       {"gpus", p.gpus},               {"calibration", p.calibration},
                       {"note", check.note},           {"figures", std::move(figures)}};
}

// Per-run caveats that are not about the workload: the user should still know them first.
void addRunWarnings(const ComparedRun& run, std::vector<CompareWarning>& out)
{
    const std::string who = run.label();
    if (!run.meta)
        out.push_back({WarningSeverity::Warning, "no_meta",
                       who + ": no meta line was stored, so world size, peak rate and data source are unknown"});
    if (!run.window.detected && !run.window.userOverride)
        out.push_back({WarningSeverity::Warning, "no_steady_state",
                       who + ": " + run.window.note + " (" + std::to_string(run.window.size()) +
                           " steps); pass --window FIRST:LAST to choose one"});
    if (run.summary.malformedLines > 0)
        out.push_back({WarningSeverity::Info, "malformed_lines",
                       who + ": " + std::to_string(run.summary.malformedLines) +
                           " malformed metrics line(s) were skipped"});
}

// Runs are independent: analyse (or load) them on up to hardware_concurrency threads. 20 runs of
// 100k steps take a few hundred ms on one core, and the GUI waits for them.
void forEachRun(size_t count, const std::function<void(size_t)>& work)
{
    const size_t threads = std::min<size_t>(count, std::max(1u, std::thread::hardware_concurrency()));
    if (threads <= 1) {
        for (size_t i = 0; i < count; ++i)
            work(i);
        return;
    }
    std::atomic<size_t> next{0};
    std::vector<std::thread> pool;
    for (size_t t = 0; t < threads; ++t)
        pool.emplace_back([&] {
            for (size_t i = next++; i < count; i = next++)
                work(i);
        });
    for (auto& thread : pool)
        thread.join();
}

/// Loads one run through `store`; the ids are already resolved. With `previous` (the same run,
/// loaded before) only the steps after its last one are read and appended.
Result<ComparedRun> loadRun(RunStore& store, const std::string& id, const ComparedRun* previous = nullptr)
{
    ComparedRun r;
    auto summary = store.run(id);
    if (!summary)
        return summary.error();
    r.summary = std::move(*summary);
    if (previous) {
        r.configJson = previous->configJson;  // stored once, at creation
    } else if (auto config = store.configJson(id)) {
        r.configJson = std::move(*config);
    }
    if (auto meta = store.meta(id))
        r.meta = std::move(*meta);
    auto prediction = store.prediction(id);
    if (!prediction)
        return prediction.error();
    r.prediction = std::move(*prediction);
    auto gpu = store.gpuRecords(id);
    if (!gpu)
        return gpu.error();
    r.gpu = std::move(*gpu);
    const int64_t after = previous && !previous->steps().empty() ? previous->steps().step.back() : -1;
    auto columns = store.stepColumns(id, StepSeries::fields(), after);
    if (!columns)
        return columns.error();
    if (previous && columns->size() == 0) {
        r.stepData = previous->stepData;  // nothing new: share, do not copy
    } else if (previous) {
        StepSeries steps = previous->steps();
        steps.append(StepSeries::fromColumns(std::move(*columns)));
        r.setSteps(std::move(steps));
    } else {
        r.setSteps(StepSeries::fromColumns(std::move(*columns)));  // the columns are moved, not copied
    }
    return r;
}

/// Resolves ids/prefixes and the baseline. NotFound / InvalidArgument.
Result<std::vector<std::string>> resolveIds(RunStore& store, const CompareRequest& request, size_t& baseline)
{
    if (request.runs.empty())
        return makeError(ErrorCode::InvalidArgument, "name at least one run to compare");
    std::vector<std::string> ids;
    for (const auto& idOrPrefix : request.runs) {
        auto id = store.resolveRunId(idOrPrefix);
        if (!id)
            return id.error();
        ids.push_back(*id);
    }
    baseline = 0;
    if (request.baseline) {
        auto id = store.resolveRunId(*request.baseline);
        if (!id)
            return id.error();
        const auto it = std::find(ids.begin(), ids.end(), *id);
        if (it == ids.end())
            return makeError(ErrorCode::InvalidArgument, "the baseline must be one of the compared runs",
                             *request.baseline);
        baseline = static_cast<size_t>(it - ids.begin());
    }
    return ids;
}

}  // namespace

std::string ComparedRun::label() const
{
    return summary.name.empty() ? summary.id : summary.name;
}

bool Comparison::hasCritical() const
{
    return std::any_of(warnings.begin(), warnings.end(),
                       [](const auto& w) { return w.severity == WarningSeverity::Critical; });
}

namespace {

double medianOrNaN(const RobustStats& s)
{
    return s.valid() ? s.median : std::numeric_limits<double>::quiet_NaN();
}

template <size_t Phase>
FigureSpec phaseSpec()
{
    return {stepPhases()[Phase].key, stepPhases()[Phase].label, "ms", false, 1,
            [](const RunFigures& f) { return medianOrNaN(f.phaseMs[Phase]); },
            [](const RunFigures& f) { return &f.phaseMs[Phase]; }};
}

}  // namespace

const std::vector<FigureSpec>& figureSpecs()
{
    static const std::vector<FigureSpec> kSpecs = {
        {"tokens_per_s_per_gpu", "effective tokens/s/GPU", "tok/s", true, 1,
         [](const RunFigures& f) { return f.tokensPerSPerGpu.median; },
         [](const RunFigures& f) { return &f.tokensPerSPerGpu; }},
        {"gpu_ms_per_1k_tokens", "GPU-ms per 1k eff. tokens", "ms", false, 2,
         [](const RunFigures& f) { return f.gpuMsPer1kTokens.median; },
         [](const RunFigures& f) { return &f.gpuMsPer1kTokens; }},
        {"tflops_per_gpu", "TFLOP/s/GPU", "TFLOP/s", true, 2,
         [](const RunFigures& f) { return medianOrNaN(f.tflopsPerGpu); },
         [](const RunFigures& f) { return &f.tflopsPerGpu; }},
        // No MFU without a known peak (CPU runs): n/a, not a 0 % that reads as a result.
        {"mfu", "MFU", "%", true, 2, [](const RunFigures& f) { return medianOrNaN(f.mfu) * 100.0; },
         [](const RunFigures& f) { return &f.mfu; }, 100.0},
        {"step_ms", "step time", "ms", false, 1, [](const RunFigures& f) { return f.stepMs.median; },
         [](const RunFigures& f) { return &f.stepMs; }},
        phaseSpec<0>(),
        phaseSpec<1>(),
        phaseSpec<2>(),
        phaseSpec<3>(),
        phaseSpec<4>(),
        phaseSpec<5>(),
        {"effective_tokens_per_step", "effective tokens/step", "tok", true, 0,
         [](const RunFigures& f) { return f.effectiveTokensPerStep.median; },
         [](const RunFigures& f) { return &f.effectiveTokensPerStep; }},
        {"peak_mem_gib", "peak memory, whole run", "GiB", false, 3, [](const RunFigures& f) { return f.peakMemGib; },
         nullptr},
        // GPU system metrics over the window (NVML samples; n/a without them). Utilization and
        // the SM clock count higher as better; power and temperature lower.
        {"gpu_util_pct", "GPU utilization (mean of GPUs)", "%", true, 1,
         [](const RunFigures& f) { return medianOrNaN(f.gpuUtilPct); }, [](const RunFigures& f) { return &f.gpuUtilPct; }},
        {"gpu_power_w", "GPU power (mean of GPUs)", "W", false, 0,
         [](const RunFigures& f) { return medianOrNaN(f.gpuPowerW); }, [](const RunFigures& f) { return &f.gpuPowerW; }},
        {"gpu_temp_c", "GPU temperature (hottest)", "°C", false, 0,
         [](const RunFigures& f) { return medianOrNaN(f.gpuTempC); }, [](const RunFigures& f) { return &f.gpuTempC; }},
        {"gpu_sm_clock_mhz", "SM clock (slowest GPU)", "MHz", true, 0,
         [](const RunFigures& f) { return medianOrNaN(f.gpuSmClockMhz); },
         [](const RunFigures& f) { return &f.gpuSmClockMhz; }},
    };
    static_assert(kStepPhaseCount == 6, "one phaseSpec<> per step phase");
    return kSpecs;
}

std::optional<double> relativeDelta(double value, double baseline)
{
    if (!std::isfinite(value) || !std::isfinite(baseline) || baseline == 0.0)
        return std::nullopt;
    return (value - baseline) / std::abs(baseline);
}

Result<Comparison> buildComparison(std::vector<ComparedRun> runs, size_t baseline,
                                   const std::optional<StepWindow>& window, const SteadyStateOptions& options)
{
    if (runs.empty() || baseline >= runs.size())
        return makeError(ErrorCode::InvalidArgument, "compare needs at least one run and a baseline among them");
    // Names label the runs in messages, tables and legends; two runs with one name would be
    // ambiguous, so those get the short part of their id ("baseline · 6c6f": a chart legend has
    // room for it, issue 18 item 3), or the whole id when even that repeats.
    std::multiset<std::string> names;
    for (const auto& r : runs)
        names.insert(r.summary.name);
    const auto shortId = [](const std::string& id) {
        const size_t dash = id.rfind('-');
        return dash == std::string::npos || dash + 1 >= id.size() ? id : id.substr(dash + 1);
    };
    std::multiset<std::string> shortLabels;
    for (const auto& r : runs)
        if (names.count(r.summary.name) > 1)
            shortLabels.insert(r.summary.name + " · " + shortId(r.summary.id));
    for (auto& r : runs) {
        if (names.count(r.summary.name) <= 1)
            continue;
        const std::string shortLabel = r.summary.name + " · " + shortId(r.summary.id);
        if (r.summary.name.empty())
            r.summary.name = r.summary.id;
        else
            r.summary.name = shortLabels.count(shortLabel) > 1 ? r.summary.name + " (" + r.summary.id + ")" : shortLabel;
    }

    Comparison c;
    c.baseline = baseline;
    std::vector<std::string> labels, configs;
    std::vector<WorkloadFingerprint> fingerprints;
    std::vector<std::optional<Error>> errors(runs.size());
    forEachRun(runs.size(), [&](size_t i) {
        ComparedRun& r = runs[i];
        auto w = resolveWindow(r.steps(), window, options);
        if (!w) {
            errors[i] = w.error();
            errors[i]->context = r.summary.id;
            return;
        }
        r.window = *w;
        r.figures = computeRunFigures(r.steps(), r.window, r.worldSize(), r.meta ? r.meta->peakTflops : 0.0);
        addGpuFigures(r.figures, r.steps(), r.window, r.gpu);
        r.fingerprint = makeFingerprint(r.configJson, r.meta, r.steps(), r.window);
        r.predictionCheck.reset();
        if (r.prediction)
            r.predictionCheck = checkPrediction(*r.prediction, r.figures, r.meta ? r.meta->worldSize : 0);
    });
    for (auto& r : runs) {
        if (auto& e = errors[static_cast<size_t>(&r - runs.data())])
            return *e;
        labels.push_back(r.label());
        configs.push_back(r.configJson);
        fingerprints.push_back(r.fingerprint);
    }
    c.warnings = compareWorkloads(labels, fingerprints);  // one run: still says "mock data"
    for (const auto& r : runs)
        addRunWarnings(r, c.warnings);
    std::stable_sort(c.warnings.begin(), c.warnings.end(),
                     [](const auto& a, const auto& b) { return a.severity < b.severity; });
    c.configDiff = diffConfigs(configs);
    std::vector<PredictionCheck> checks;
    for (const auto& r : runs)
        if (r.predictionCheck)
            checks.push_back(*r.predictionCheck);
    c.predictionAccuracy = predictionAccuracy(checks);
    c.runs = std::move(runs);
    return c;
}

Result<Comparison> compareRuns(RunStore& store, const CompareRequest& request)
{
    size_t baseline = 0;
    auto ids = resolveIds(store, request, baseline);
    if (!ids)
        return ids.error();
    std::vector<ComparedRun> runs;
    for (const auto& id : *ids) {
        auto run = loadRun(store, id);
        if (!run)
            return run.error();
        runs.push_back(std::move(*run));
    }
    return buildComparison(std::move(runs), baseline, request.window, request.steadyState);
}

Result<Comparison> compareRuns(const std::string& storePath, const CompareRequest& request,
                               const std::vector<ComparedRun>& loaded)
{
    auto store = RunStore::open(storePath);
    if (!store)
        return store.error();
    size_t baseline = 0;
    auto ids = resolveIds(**store, request, baseline);
    if (!ids)
        return ids.error();
    // One connection per thread, as RunStore requires; WAL lets them read side by side.
    std::vector<std::optional<Result<ComparedRun>>> results(ids->size());
    forEachRun(ids->size(), [&](size_t i) {
        auto own = RunStore::open(storePath);
        const auto previous = std::find_if(loaded.begin(), loaded.end(),
                                           [&](const ComparedRun& r) { return r.summary.id == (*ids)[i]; });
        results[i] = own ? loadRun(**own, (*ids)[i], previous == loaded.end() ? nullptr : &*previous)
                         : Result<ComparedRun>(own.error());
    });
    std::vector<ComparedRun> runs;
    for (auto& run : results) {
        if (!*run)
            return run->error();
        runs.push_back(std::move(**run));
    }
    return buildComparison(std::move(runs), baseline, request.window, request.steadyState);
}

std::string comparisonToJson(const Comparison& c)
{
    OrderedJson out;
    out["baseline"] = c.runs[c.baseline].summary.id;
    OrderedJson warnings = OrderedJson::array();
    for (const auto& w : c.warnings)
        warnings.push_back({{"severity", severityName(w.severity)}, {"code", w.code}, {"message", w.message}});
    out["warnings"] = std::move(warnings);
    const RunFigures& base = c.runs[c.baseline].figures;
    OrderedJson runs = OrderedJson::array();
    for (const auto& r : c.runs) {
        OrderedJson run;
        run["id"] = r.summary.id;
        run["name"] = r.summary.name;
        run["status"] = runStateName(r.summary.status);
        run["steps"] = r.steps().size();
        run["window"] = {
            {"first_step", r.window.size() ? OrderedJson(r.steps().step[r.window.begin]) : OrderedJson(nullptr)},
            {"last_step", r.window.size() ? OrderedJson(r.steps().step[r.window.end - 1]) : OrderedJson(nullptr)},
            {"steps", r.window.size()},
            {"detected", r.window.detected},
            {"user_override", r.window.userOverride},
            {"band", r.window.band},
            {"note", r.window.note}};
        OrderedJson figures;
        for (const auto& spec : figureSpecs()) {
            const double v = spec.value(r.figures);
            OrderedJson fig{{"value", finiteOrNull(v)}, {"unit", spec.unit}};
            if (spec.stats)
                fig["stats"] = statsJson(*spec.stats(r.figures));
            const auto delta = relativeDelta(v, spec.value(base));
            fig["delta_vs_baseline"] = delta ? OrderedJson(*delta) : OrderedJson(nullptr);
            figures[spec.key] = std::move(fig);
        }
        run["figures"] = std::move(figures);
        const auto& f = r.fingerprint;
        run["workload"] = {{"data_source", f.dataSource},
                           {"seq_length", f.seqLength},
                           {"micro_batch_size", f.microBatchSize},
                           {"global_batch_size", f.globalBatchSize},
                           {"world_size", f.worldSize},
                           {"layout", f.layout},
                           {"device", f.device},
                           {"precision", f.precision},
                           {"images_per_sample_configured", f.imagesPerSampleConfigured},
                           {"images_per_sample", finiteOrNull(f.imagesPerSample)},
                           {"image_tokens_per_sample", statsJson(f.imageTokensPerSample)},
                           {"text_tokens_per_sample", statsJson(f.textTokensPerSample)},
                           {"min_pixels", f.minPixels},
                           {"max_pixels", f.maxPixels},
                           {"frozen_modules", f.frozenModules},
                           {"model", f.model}};
        run["prediction"] = r.predictionCheck ? predictionJson(*r.predictionCheck) : OrderedJson(nullptr);
        runs.push_back(std::move(run));
    }
    out["runs"] = std::move(runs);
    OrderedJson accuracy = OrderedJson::object();
    for (const auto& a : c.predictionAccuracy)
        accuracy[a.key] = {{"mean_abs_error_pct", finiteOrNull(a.meanAbsErrorPct)}, {"runs", a.runs}};
    out["prediction_accuracy"] = std::move(accuracy);
    OrderedJson diff = OrderedJson::array();
    for (const auto& row : c.configDiff.rows) {
        OrderedJson values = OrderedJson::array();
        for (const auto& v : row.values)
            values.push_back(v.empty() ? OrderedJson(nullptr) : OrderedJson::parse(v, nullptr, false));
        diff.push_back({{"key", row.key}, {"values", std::move(values)}});
    }
    out["config_diff"] = std::move(diff);
    return out.dump(2);
}

}  // namespace wb::core
