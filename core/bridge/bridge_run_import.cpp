// Importing a Megatron-Bridge run: the log read whole, the layout from the config file (or from
// the log's own configuration summary), the planner's prediction for that exact layout.
#include "core/bridge/bridge_run_import.h"

#include "core/bridge/tensorboard_events.h"
#include "core/compare/steady_state.h"
#include "core/planner/bridge_import.h"
#include "core/planner/layout_file.h"
#include "core/planner/prediction.h"
#include "core/run_config.h"
#include "core/run_target.h"
#include "core/text_file.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <set>
#include <sstream>

namespace wb::core::bridge {

namespace {

constexpr double kMissing = std::numeric_limits<double>::quiet_NaN();

Result<std::string> readBytes(const std::string& path, const char* what)
{
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
        return makeError(ErrorCode::NotFound,
                         std::string("no such ") + what + " file (give the path of the file the job wrote)", path);
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return makeError(ErrorCode::IoError, std::string("cannot open the ") + what + " file for reading", path);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad())
        return makeError(ErrorCode::IoError, std::string("reading the ") + what + " file failed", path);
    return bytes;
}

// Python's repr of a value (Bridge's configuration summary) as a dotlist value: 'x' -> x,
// True -> true, None -> null, ['a', 'b'] -> [a, b].
std::string dotlistValue(std::string v)
{
    if (v == "True")
        return "true";
    if (v == "False")
        return "false";
    if (v == "None")
        return "null";
    std::string out;
    out.reserve(v.size());
    for (char c : v)
        if (c != '\'' && c != '"')
            out.push_back(c);
    return out;
}

// What the log says of the layout, as a dotlist of the Bridge fields the workbench reads: Bridge's
// configuration summary (the values that differ from Megatron Core's defaults), Megatron-LM's
// argument dump and its world-size line. The layout file for the planner when no config is given.
std::string dotlistFromLog(const LogFacts& facts)
{
    const std::vector<std::string>& known = planner::bridgeKnownFields();
    const std::set<std::string> knownSet(known.begin(), known.end());
    std::map<std::string, std::string> fields;
    // Megatron-LM's arguments carry Megatron-Core's names; the batch ones live under train.
    for (const auto& [name, value] : facts.arguments) {
        const std::string key =
            name == "micro_batch_size" || name == "global_batch_size" || name == "train_iters" ? "train." + name : "model." + name;
        if (knownSet.count(key))
            fields[key] = dotlistValue(value);
    }
    const auto sized = [&](const char* key, const std::optional<int>& v) {
        if (v && !fields.count(key))
            fields[key] = std::to_string(*v);
    };
    sized("model.tensor_model_parallel_size", facts.tensorParallel);
    sized("model.pipeline_model_parallel_size", facts.pipelineParallel);
    sized("model.context_parallel_size", facts.contextParallel);
    for (const auto& [key, value] : facts.settings)
        if (knownSet.count(key))
            fields[key] = dotlistValue(value);
    // Bridge's summary lists the model config's precision flag; the workbench reads it from
    // mixed_precision.
    if (auto bf16 = facts.settings.find("model.bf16"); bf16 != facts.settings.end() && !fields.count("mixed_precision.bf16"))
        fields["mixed_precision.bf16"] = dotlistValue(bf16->second);
    // Megatron Core's default modules for selective recompute (TransformerConfig.recompute_modules),
    // which a summary of non-default values leaves out.
    if (fields.count("model.recompute_granularity") && fields["model.recompute_granularity"] == "selective" &&
        !fields.count("model.recompute_modules"))
        fields["model.recompute_modules"] = "[core_attn]";
    std::string out;
    for (const auto& [key, value] : fields)
        out += key + "=" + value + "\n";
    return out;
}

// Bridge's TensorBoard tags (train_utils.py training_log) and the step field each fills. Memory
// is in GB (1e9 bytes), reduced to the max over the pipeline group, as in the log.
struct TensorBoardField {
    const char* tag;
    double StepRecord::*member;
    double scale;
};
constexpr double kGbToGib = 1e9 / (1024.0 * 1024.0 * 1024.0);
constexpr TensorBoardField kTensorBoardFields[] = {
    {"iteration-time", &StepRecord::stepMs, 1000.0},
    {"lm loss", &StepRecord::loss, 1.0},
    {"load_balancing_loss", &StepRecord::auxLoss, 1.0},
    {"grad-norm", &StepRecord::gradNorm, 1.0},
    {"learning-rate", &StepRecord::lr, 1.0},
    {"throughput/tflops/device", &StepRecord::tflopsPerGpu, 1.0},
    {"memory/mem-allocated-gigabytes", &StepRecord::memAllocGib, kGbToGib},
    {"memory/mem-max-reserved-gigabytes", &StepRecord::memReservedGib, kGbToGib},
    {"memory/mem-max-allocated-gigabytes", &StepRecord::memPeakGib, kGbToGib},
};

// The event files' scalars into the steps: a field the log left empty (NaN; memory after the first
// report) is filled, and a step the log's interval skipped is added when its iteration time was
// written. Returns {steps added, steps filled, points read}.
struct TensorBoardMerge {
    int64_t added = 0, filled = 0, points = 0;
};
TensorBoardMerge mergeTensorBoard(const TensorBoardScalars& tb, std::vector<StepRecord>& steps, const StepContext& context)
{
    TensorBoardMerge merge;
    std::map<int64_t, size_t> index;
    for (size_t i = 0; i < steps.size(); ++i)
        index[steps[i].step] = i;  // a repeated step: the later record (the one the store keeps)
    std::map<int64_t, StepRecord> added;
    std::set<int64_t> filled;
    for (const TensorBoardField& field : kTensorBoardFields) {
        auto it = tb.byTag.find(field.tag);
        if (it == tb.byTag.end())
            continue;
        for (const ScalarPoint& p : it->second) {
            ++merge.points;
            const double value = p.value * field.scale;
            if (auto at = index.find(p.step); at != index.end()) {
                double& slot = steps[at->second].*field.member;
                if (std::isnan(slot) || (field.member == &StepRecord::tflopsPerGpu && slot == 0.0)) {
                    slot = value;
                    filled.insert(p.step);
                }
                continue;
            }
            auto [record, fresh] = added.try_emplace(p.step);
            if (fresh) {
                StepRecord& r = record->second;
                r.step = p.step;
                r.time = p.wallTime;
                r.loss = r.auxLoss = r.gradNorm = r.lr = r.tflopsPerGpu = r.mfu = kMissing;
                r.memAllocGib = r.memReservedGib = r.memPeakGib = kMissing;
            }
            record->second.*field.member = value;
        }
    }
    for (auto& [step, r] : added) {
        if (!(r.stepMs > 0.0))
            continue;  // no iteration time: not a step the store can use
        if (context.seqLength > 0 && context.globalBatchSize > 0) {
            r.effectiveTokens = static_cast<int64_t>(context.globalBatchSize) * context.seqLength;
            if (context.worldSize > 0)
                r.tokensPerSPerGpu = static_cast<double>(r.effectiveTokens) / (r.stepMs / 1000.0) / context.worldSize;
        }
        if (context.peakTflops > 0.0 && std::isfinite(r.tflopsPerGpu))
            r.mfu = r.tflopsPerGpu / context.peakTflops;
        steps.push_back(r);
        ++merge.added;
    }
    for (int64_t step : filled)
        if (auto at = index.find(step); at != index.end()) {
            StepRecord& r = steps[at->second];
            if (context.peakTflops > 0.0 && std::isfinite(r.tflopsPerGpu) && std::isnan(r.mfu))
                r.mfu = r.tflopsPerGpu / context.peakTflops;
        }
    merge.filled = static_cast<int64_t>(filled.size());
    std::stable_sort(steps.begin(), steps.end(), [](const StepRecord& a, const StepRecord& b) { return a.step < b.step; });
    return merge;
}

std::string layoutString(const planner::Layout& l)
{
    return "tp" + std::to_string(l.tp) + " pp" + std::to_string(l.pp) + " cp" + std::to_string(l.cp) + " ep" +
           std::to_string(l.ep) + " etp" + std::to_string(l.etp) + " dp" + std::to_string(l.dp());
}

std::string fmt(const char* format, double v)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, format, v);
    return buf;
}

}  // namespace

ParsedChunk::Memory toStoreMemory(const MemoryReport& m)
{
    return {m.iteration, m.allocatedGib.value_or(kMissing), m.peakReservedGib.value_or(m.reservedGib.value_or(kMissing)),
            m.peakAllocatedGib.value_or(kMissing)};
}

Result<BridgeRunSetup> resolveBridgeRun(const planner::Catalog& catalog, const BridgeImportRequest& request,
                                        const std::string& configText, const LogState& state,
                                        const std::vector<IterationRecord>& iterations, bool predict)
{
    BridgeRunSetup setup;

    // The layout: the config file, else what the log's configuration summary says.
    std::string layoutText, layoutPath;
    bool yaml = false;
    if (request.configPath) {
        layoutText = configText;
        layoutPath = *request.configPath;
        yaml = planner::layoutFileKind(layoutPath, layoutText).yaml;
    } else if (std::string fromLog = dotlistFromLog(state.facts); !fromLog.empty()) {
        layoutText = std::move(fromLog);
        layoutPath = request.logPath + " (its start-up lines)";
        setup.notes.push_back(state.facts.settings.empty()
                                    ? "layout from the log's start-up lines (Megatron-LM's arguments); --config YAML "
                                      "gives the whole resolved config"
                                    : "layout from the log's configuration summary (the values that differ from "
                                      "Megatron Core's defaults); --config YAML gives the whole resolved config");
    }

    // The world size: --gpus, else the log's start-up line, else the highest rank prefix + 1 (srun -l
    // and torchrun label every rank's lines; said so in a note).
    int world = request.gpus.value_or(state.facts.worldSize.value_or(0));
    if (world <= 0 && state.facts.highestRankPrefix >= 0) {
        world = state.facts.highestRankPrefix + 1;
        setup.notes.push_back("world size " + std::to_string(world) + " from the highest rank prefix in the log (" +
                                std::to_string(state.facts.highestRankPrefix) +
                                "); give --gpus N if some ranks never wrote a line");
    }
    if (request.gpus && state.facts.worldSize && *state.facts.worldSize != *request.gpus)
        setup.notes.push_back("the log says world size " + std::to_string(*state.facts.worldSize) + "; --gpus " +
                                std::to_string(*request.gpus) + " was used");

    RunConfig base;
    std::optional<planner::ModelSpec> model;
    if (request.model) {
        auto m = catalog.model(*request.model);
        if (!m)
            return m.error();
        model = *m;
        base.model = m->model;
    }
    std::optional<planner::HardwareSpec> hardware;
    if (request.hardware) {
        auto h = catalog.hardware(*request.hardware);
        if (!h)
            return h.error();
        hardware = *h;
    }

    planner::BridgeImport imported;
    if (!layoutText.empty()) {
        imported = planner::importBridgeOverrides(layoutText, yaml, base, std::max(world, 1));
        for (const planner::BridgeImportProblem& p : imported.problems)
            if (p.error && request.configPath)
                return makeError(ErrorCode::InvalidArgument,
                                 "line " + std::to_string(p.line) + ": " + p.key + ": " + p.message +
                                     (p.fix.empty() ? "" : " (" + p.fix + ")"),
                                 layoutPath);
    }
    const bool haveLayout = !layoutText.empty();
    const int seq = haveLayout && imported.lineOfConfigPath("train.seq_length") > 0 ? imported.config.train.seqLength : 0;
    int gbs = haveLayout && imported.lineOfConfigPath("train.global_batch_size") > 0 ? imported.config.train.globalBatchSize : 0;
    for (const IterationRecord& it : iterations)
        if (it.globalBatchSize) {
            gbs = static_cast<int>(*it.globalBatchSize);
            break;
        }
    // A layout read from the log's start-up lines takes the batch the iteration lines log, and
    // says what it assumed where the log is silent.
    if (haveLayout && !request.configPath) {
        bool reread = false;
        if (gbs > 0 && imported.lineOfConfigPath("train.global_batch_size") == 0) {
            layoutText += "train.global_batch_size=" + std::to_string(gbs) + "\n";
            reread = true;
        }
        if (imported.lineOfConfigPath("train.micro_batch_size") == 0) {
            layoutText += "train.micro_batch_size=1\n";
            setup.notes.push_back("micro batch size not in the log: 1 assumed for the prediction");
            reread = true;
        }
        if (reread)
            imported = planner::importBridgeOverrides(layoutText, false, base, std::max(world, 1));
    }

    // The meta record: what the files say, nothing more.
    MetaRecord meta;
    meta.name = request.name.empty() ? std::filesystem::path(request.logPath).filename().string() : request.name;
    meta.worldSize = world > 0 ? world : 1;
    if (haveLayout && world > 0)
        imported.layout.worldSize = world;
    meta.layout = haveLayout ? layoutString(imported.layout) : std::string();
    meta.device = hardware ? hardware->name : std::string();
    meta.dataSource = imported.data.target.empty() ? std::string() : imported.data.mock ? "mock" : "real";
    meta.peakTflops = hardware ? hardware->peakDenseBf16Tflops : 0.0;
    meta.seqLength = seq;
    meta.microBatchSize = haveLayout && imported.lineOfConfigPath("train.micro_batch_size") > 0 ? imported.config.train.microBatchSize : 0;
    meta.globalBatchSize = gbs;
    meta.versions["trainer"] = state.facts.flavor.empty() ? "megatron" : state.facts.flavor;
    meta.tokenCounting = "slots";
    setup.meta = meta;
    setup.context = {world, seq, gbs, meta.peakTflops};
    setup.haveLayout = haveLayout;
    if (haveLayout) {
        setup.configJson = runConfigToJson(imported.config);
        setup.configHash = runConfigHash(imported.config);
    }

    if (world <= 0)
        setup.notes.push_back("world size unknown (the log does not state it): no tokens/s/GPU and no prediction. "
                                "Fix: give --gpus N");
    if (seq <= 0)
        setup.notes.push_back("sequence length unknown: no token counts or tokens/s/GPU. Fix: give --config "
                                "with the YAML Bridge saved (model.seq_length)");
    if (!hardware)
        setup.notes.push_back("GPU unknown: no MFU and no prediction. Fix: give --hardware (h100, h200, b200, gb200, ...)");
    if (meta.dataSource.empty())
        setup.notes.push_back("the data (mock or real) is not known from the files; comparisons will say so");
    setup.notes.push_back("token counts are token slots (GBS x seq, padding included): Megatron logs no finer count");

    // The planner's prediction for exactly this layout, for Bridge.
    if (!predict) {
    } else if (model && hardware && world > 0 && haveLayout) {
        planner::LayoutFileRequest r;
        // The summary's dotlist is named so the planner reads it as one.
        r.path = request.configPath ? layoutPath : request.logPath + ".dotlist";
        r.text = layoutText;
        r.model = request.model;
        r.hardware = request.hardware;
        r.gpus = world;
        r.forRuntime = "megatron-bridge";
        auto predicted = planner::predictLayoutFile(catalog, r);
        if (predicted)
            setup.prediction = planner::predictionForCandidate(predicted->candidate, predicted->hardware, "", 0.0);
        else
            setup.notes.push_back("no prediction: " + predicted.error().message);
    } else if (!model) {
        setup.notes.push_back("no prediction: the model is not known. Fix: give --model (moe-workbench-cli plan --help "
                                "lists the catalog's models)");
    } else if (!haveLayout) {
        setup.notes.push_back("no prediction: the layout is not known. Fix: give --config with the YAML Bridge saved");
    }

    return setup;
}

Result<BridgeImportSummary> importBridgeRun(RunStore& store, const planner::Catalog& catalog,
                                            const BridgeImportRequest& request)
{
    auto bytes = readBytes(request.logPath, "log");
    if (!bytes)
        return bytes.error();
    LogState state;
    const LogChunk chunk = parseLogChunk(*bytes, state, /*atEnd=*/true);
    if (state.counts.iterationLines == 0)
        return makeError(ErrorCode::InvalidArgument,
                         "not a Megatron training log: none of its " + std::to_string(state.counts.lines) +
                             " lines is an iteration line (\"iteration N/M | ... | elapsed time per iteration "
                             "(ms): ...\")" +
                             (state.counts.unreadableIterationLines > 0
                                  ? " (" + std::to_string(state.counts.unreadableIterationLines) +
                                        " iteration lines have no elapsed time)"
                                  : std::string()) +
                             ". Fix: give the job's stdout — the Slurm output file, or the file the launcher's "
                             "output went to — from a run that reached its first log interval",
                         request.logPath);

    // The config file, read once (the follower keeps its text in the run's reader state).
    std::string configText;
    if (request.configPath) {
        auto text = readTextFile(*request.configPath, "config");
        if (!text)
            return text.error();
        if (planner::emptyLayoutFile(*request.configPath, *text))
            return makeError(ErrorCode::InvalidArgument,
                             "the config file is empty. Fix: give the YAML Bridge saved (logger.save_config_filepath)",
                             *request.configPath);
        configText = std::move(*text);
    }
    auto resolved = resolveBridgeRun(catalog, request, configText, state, chunk.iterations, /*predict=*/true);
    if (!resolved)
        return resolved.error();
    BridgeImportSummary summary;
    summary.counts = state.counts;
    summary.tornTail = chunk.tornTail;
    summary.meta = resolved->meta;
    summary.prediction = resolved->prediction;
    summary.notes = resolved->notes;
    const StepContext context = resolved->context;
    const MetaRecord& meta = summary.meta;
    const int world = context.worldSize;

    // The chunk as the store keeps it.
    ParsedChunk parsed;
    parsed.offset = 0;
    parsed.newOffset = chunk.consumedBytes;
    std::set<int64_t> stepsSeen;
    for (const IterationRecord& it : chunk.iterations) {
        parsed.steps.push_back(toStepRecord(it, context));
        stepsSeen.insert(it.iteration);
    }
    if (request.tensorboardDir) {
        auto tb = readTensorBoardEvents(*request.tensorboardDir);
        if (!tb)
            return tb.error();
        // A stable sort by step keeps a repeated iteration's later record last, as the store does.
        std::stable_sort(parsed.steps.begin(), parsed.steps.end(),
                         [](const StepRecord& a, const StepRecord& b) { return a.step < b.step; });
        const TensorBoardMerge merged = mergeTensorBoard(*tb, parsed.steps, context);
        summary.tensorboardPoints = merged.points;
        summary.tensorboardSteps = merged.added;
        summary.tensorboardFilled = merged.filled;
        for (const std::string& w : tb->warnings)
            summary.notes.push_back("tensorboard: " + w);
        if (merged.points == 0)
            summary.notes.push_back("tensorboard: none of the event files' tags is one Bridge's training_log writes "
                                    "(lm loss, iteration-time, memory/...): nothing read from them");
        for (const StepRecord& step : parsed.steps)
            stepsSeen.insert(step.step);
    }
    for (const MemoryReport& m : chunk.memory)
        parsed.memory.push_back(toStoreMemory(m));
    parsed.events = chunk.events;
    parsed.meta = meta;
    parsed.sourceState = toJson(state);
    parsed.malformedLines = state.counts.unreadableIterationLines + (chunk.tornTail ? 1 : 0);
    summary.steps = static_cast<int64_t>(stepsSeen.size());
    summary.memoryReports = static_cast<int64_t>(chunk.memory.size());
    if (chunk.tornTail)
        summary.notes.push_back("the log's last line is cut off (the job was killed mid-write): not stored");

    NewRun run;
    run.name = meta.name;
    run.target = "imported";
    run.runDir = std::filesystem::path(request.logPath).parent_path().string();
    run.kind = kRunKindBridge;
    run.sourcePath = std::filesystem::absolute(request.logPath).string();
    run.configJson = resolved->haveLayout ? resolved->configJson : "{}";
    run.configHash = resolved->configHash;
    auto id = store.importRun(run, parsed, summary.prediction, RunState::Finished, 0);
    if (!id)
        return id.error();
    summary.runId = *id;
    summary.meta.runId = *id;

    // Predicted beside measured, over the steady window (each iteration once, the later kept).
    if (summary.prediction) {
        std::map<int64_t, StepRecord> byStep;
        for (const StepRecord& step : parsed.steps)
            byStep[step.step] = step;
        for (const ParsedChunk::Memory& m : parsed.memory)
            if (auto it = byStep.find(m.step); it != byStep.end()) {
                const auto raise = [](double& slot, double v) {
                    if (std::isfinite(v))
                        slot = std::isfinite(slot) ? std::max(slot, v) : v;
                };
                raise(it->second.memAllocGib, m.allocGib);
                raise(it->second.memReservedGib, m.reservedGib);
                raise(it->second.memPeakGib, m.peakGib);
            }
        std::vector<StepRecord> steps;
        steps.reserve(byStep.size());
        for (auto& [step, record] : byStep)
            steps.push_back(record);
        if (auto window = resolveWindow(steps, std::nullopt); window) {
            const RunFigures figures = computeRunFigures(steps, *window, world, meta.peakTflops);
            summary.check = checkPrediction(*summary.prediction, figures, world);
        }
    }
    return summary;
}

std::string describeImport(const BridgeImportSummary& s)
{
    std::ostringstream out;
    out << "imported run " << s.runId << " (megatron-bridge): " << s.steps << " iterations, " << s.memoryReports
        << " memory reports\n";
    out << "  read: " << describeCounts(s.counts) << "\n";
    if (s.tensorboardPoints > 0)
        out << "  tensorboard: " << s.tensorboardPoints << " points; " << s.tensorboardSteps
            << " steps the log's interval left out added, " << s.tensorboardFilled << " logged steps filled in\n";
    out << "  world " << s.meta.worldSize << (s.meta.layout.empty() ? "" : ", layout " + s.meta.layout)
        << (s.meta.seqLength > 0 ? ", seq " + std::to_string(s.meta.seqLength) : "")
        << (s.meta.globalBatchSize > 0 ? ", gbs " + std::to_string(s.meta.globalBatchSize) : "")
        << ", data " << (s.meta.dataSource.empty() ? "unknown" : s.meta.dataSource) << "\n";
    if (s.prediction)
        out << "  predicted (planner, for Megatron-Bridge on " << s.prediction->gpus << "x " << s.prediction->hardware
            << "): step " << fmt("%.1f", s.prediction->stepMs) << " ms, " << fmt("%.1f", s.prediction->tflopsPerGpu)
            << " TFLOP/s/GPU, MFU " << fmt("%.1f", 100.0 * s.prediction->mfu) << " %, memory "
            << fmt("%.1f", s.prediction->memoryGib) << " GiB\n";
    if (s.check) {
        out << "  predicted vs measured (steady window):\n";
        for (const PredictionRow& row : s.check->rows) {
            out << "    " << row.label << ": predicted " << fmt(("%." + std::to_string(row.decimals) + "f").c_str(), row.predicted)
                << ", measured " << fmt(("%." + std::to_string(row.decimals) + "f").c_str(), row.measured) << " " << row.unit;
            if (row.errorPct)
                out << " (" << fmt("%+.1f", *row.errorPct) << " %)";
            out << "\n";
        }
        if (!s.check->note.empty())
            out << "    " << s.check->note << "\n";
    }
    for (const std::string& note : s.notes)
        out << "  note: " << note << "\n";
    return out.str();
}

}  // namespace wb::core::bridge
