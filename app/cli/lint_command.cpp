// `lint FILE [--gpus N] [--hardware H] [--json]`: a runtime config's problems (syntax, keys, types,
// ranges, consistency) and the planner's layout rules (megatron-bridge.md §3, §6, hardware), each
// with the line it sits on, its rule and its fix. Exit 0 when nothing is an error, 2 otherwise.
#include "app/cli/cli.h"
#include "app/cli/planner_cli.h"

#include "core/planner/bridge_import.h"
#include "core/planner/lint.h"
#include "core/planner/plan_json.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <numeric>
#include <regex>

#include <nlohmann/json.hpp>

namespace wb::app {

using namespace core::planner;

namespace {

constexpr const char* kSynopsis = "lint FILE [--gpus N] [--hardware H] [--model M] [--catalog DIR] [--json]";

struct Entry {
    int line = 0;
    std::string severity;  // error | warning | note
    std::string rule;
    std::string field;
    std::string message;
    std::string fix;
};

// nlohmann's syntax error names "line L, column C"; keep the line for the FILE:LINE prefix.
int syntaxErrorLine(const std::string& message)
{
    std::smatch m;
    static const std::regex kLine("line ([0-9]+)");
    return std::regex_search(message, m, kLine) ? std::stoi(m[1]) : 0;
}

// Sorted by line; FILE:LINE: like a compiler. Exit 2 when any finding is an error.
int printFindings(const std::string& path, std::vector<Entry>& entries, int gpus, bool gpusGiven,
                  const std::optional<HardwareSpec>& hardware, bool json)
{
    std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.line < b.line; });
    const long errors = std::count_if(entries.begin(), entries.end(), [](const Entry& e) { return e.severity == "error"; });

    if (json) {
        nlohmann::ordered_json out;
        out["file"] = path;
        out["gpus"] = gpus;
        out["errors"] = errors;
        out["findings"] = nlohmann::ordered_json::array();
        for (const Entry& e : entries)
            out["findings"].push_back({{"line", e.line}, {"severity", e.severity}, {"rule", e.rule}, {"field", e.field},
                                       {"message", e.message}, {"fix", e.fix}});
        std::printf("%s\n", out.dump(2).c_str());
    } else {
        for (const Entry& e : entries) {
            // FILE:LINE: like a compiler, so editors jump there; FILE: alone for a key the file lacks.
            const std::string where = e.line > 0 ? path + ":" + std::to_string(e.line) : path;
            std::printf("%s: %s: [%s] %s%s%s\n", where.c_str(), e.severity.c_str(), e.rule.c_str(),
                        e.field.empty() ? "" : (e.field + ": ").c_str(), e.message.c_str(),
                        e.fix.empty() ? "" : (" — fix: " + e.fix).c_str());
        }
        std::printf("%s: %ld error(s), %zu finding(s) in all, checked for %d GPU(s)%s%s\n", path.c_str(), errors,
                    entries.size(), gpus, gpusGiven ? "" : " (the smallest world the layout tiles; set --gpus)",
                    hardware ? (" on " + hardware->name).c_str() : " (no --hardware: hardware rules skipped)");
    }
    return errors > 0 ? kExitUsage : kExitOk;
}

}  // namespace

int lintCommand(const CliContext&, Args args)
{
    bool missing = false;
    const auto gpusText = args.takeOption("--gpus", missing);
    auto hardwareName = args.takeOption("--hardware", missing);
    const auto catalogDir = args.takeOption("--catalog", missing);
    auto modelName = args.takeOption("--model", missing);
    const bool json = args.takeFlag("--json");
    if (auto usage = rejectLeftovers(args, missing, kSynopsis, /*allowPositional=*/true))
        return *usage;
    if (args.rest().size() != 1)
        return reportUsage("give exactly one FILE", kSynopsis);
    const std::string path = args.rest().front();

    auto read = core::readTextFile(path, "file");
    if (!read)
        return reportError(read.error());
    const std::string text = std::move(*read);
    if (auto empty = emptyLayoutFile(path, text))
        return reportError(*empty);

    // A perf launcher command names its model (-mr), GPU (-g) and world (-ng) itself; the options
    // still win when given.
    const LayoutFileKind kind = layoutFileKind(path, text);
    const bool perfLaunch = kind.perfLaunch;
    const PerfLaunch& perf = kind.perf;
    if (perfLaunch && !modelName && !perf.model.empty())
        modelName = perf.model;
    if (perfLaunch && !hardwareName && !perf.hardware.empty())
        hardwareName = perf.hardware;

    std::optional<HardwareSpec> hardware;
    std::optional<ModelSpec> model;
    if (hardwareName || modelName) {
        auto catalog = loadCliCatalog(catalogDir.value_or(""));
        if (!catalog)
            return reportError(catalog.error());
        if (hardwareName) {
            auto hw = catalog->hardware(*hardwareName);
            if (!hw)
                return reportError(hw.error());
            hardware = *hw;
        }
        if (modelName) {
            auto m = catalog->model(*modelName);
            if (!m)
                return reportError(m.error());
            model = *m;
        }
    }
    std::optional<int> gpusOption;
    if (gpusText) {
        gpusOption = parsePositive(*gpusText);
        if (!gpusOption)
            return reportUsage("--gpus needs a whole number from 1 to " + std::to_string(kMaxCliCount), kSynopsis);
    } else if (perfLaunch && perf.gpus > 0) {
        gpusOption = perf.gpus;
    }

    // Megatron-Bridge overrides (YAML file or dotlist) or a runtime config (JSON)?
    const bool yaml = kind.yaml, dotlist = kind.dotlist;
    std::vector<Entry> entries;
    int gpus = 0;
    if (yaml || dotlist) {
        if (!model)
            return reportUsage(perfLaunch ? "the perf launcher command has no known -mr recipe: give --model M"
                                          : "a Megatron-Bridge file does not name its model: give --model M",
                               kSynopsis);
        core::RunConfig base;
        base.model = model->model;
        base.runtime.device = "cuda";
        base.data.source = "mock";  // the data section is the recipe's business, not the layout's
        BridgeImport first = importBridgeOverrides(text, yaml, base, 1);
        gpus = gpusOption.value_or(smallestWorld(first.config));
        const BridgeImport imported = importBridgeOverrides(text, yaml, base, gpus);
        for (const BridgeImportProblem& p : imported.problems)
            entries.push_back({p.line, p.error ? "error" : "warning", "bridge-field", p.key, p.message, p.fix});
        LintContext ctx;
        ctx.model = &imported.config.model;
        ctx.hardware = hardware ? &*hardware : nullptr;
        ctx.seqLength = imported.config.train.seqLength;
        ctx.bf16AdamMoments = imported.config.train.expAvgDtype == "bf16" || imported.config.train.expAvgSqDtype == "bf16";
        for (const LintFinding& f : lintLayout(imported.layout, ctx)) {
            int line = imported.lineOfConfigPath(f.field);
            if (line == 0)
                if (auto it = imported.keyLines.find(f.field); it != imported.keyLines.end())
                    line = it->second;
            entries.push_back({line, lintSeverityName(f.severity), f.rule, f.field, f.message, f.fix});
        }
        return printFindings(path, entries, gpus, gpusOption.has_value(), hardware, json);
    }

    const core::RunConfigParse parsed = core::parseRunConfig(text);
    const bool syntaxOk = parsed.problems.empty() || !parsed.problems.front().path.empty() ||
                          parsed.problems.front().message.find("not valid JSON") == std::string::npos;
    gpus = gpusOption.value_or(smallestWorld(parsed.config));
    std::vector<LintFinding> findings;
    if (syntaxOk)
        findings = lintRunConfig(parsed.config, gpus, hardware ? &*hardware : nullptr);
    // lintRunConfig reuses validateRunConfig, so a consistency problem would appear twice.
    for (const core::ConfigProblem& p : parsed.problems) {
        const bool duplicate = std::any_of(findings.begin(), findings.end(), [&](const LintFinding& f) {
            return f.field == p.path && f.message == p.message;
        });
        if (duplicate)
            continue;
        const int line = p.path.empty() ? syntaxErrorLine(p.message) : jsonPathLine(text, p.path);
        entries.push_back({line, "error", "config", p.path, p.message, p.fix});
    }
    for (const LintFinding& f : findings)
        entries.push_back({jsonPathLine(text, f.field), lintSeverityName(f.severity), f.rule, f.field, f.message, f.fix});
    return printFindings(path, entries, gpus, gpusOption.has_value(), hardware, json);
}

}  // namespace wb::app
