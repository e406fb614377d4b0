#include "core/run_launch.h"

#include "core/log.h"

namespace wb::core {

Result<StartedRun> startRun(RunStore& store, RunTarget& target, const RunConfig& config,
                            const std::string& name, const RunPrediction* prediction)
{
    // A RunConfig built in code (not loaded from a file) has not been validated yet.
    if (auto problems = validateRunConfig(config); !problems.empty())
        return makeError(ErrorCode::InvalidArgument, "the config has " + std::to_string(problems.size()) +
                                                         " problem(s):\n" + formatProblems(problems));
    const std::string canonical = runConfigToJson(config);
    if (auto checked = target.validateConfig(canonical); !checked)
        return checked.error();

    // A damaged store would take the new run's rows half-way (issue 20 item 10): check it first.
    if (auto intact = store.checkIntegrity(); !intact)
        return intact.error();

    NewRun newRun;
    newRun.name = name.empty() ? config.name : name;
    newRun.target = target.name();
    newRun.configJson = canonical;
    newRun.configHash = runConfigHash(config);
    auto id = store.createRun(newRun);
    if (!id)
        return id.error();
    if (prediction) {
        if (auto r = store.setPrediction(*id, *prediction); !r) {
            (void)store.setStatus(*id, RunState::Failed, -1);
            return r.error();
        }
    }

    auto launched = target.launch({*id, newRun.name, canonical, newLaunchToken()});
    if (!launched) {
        (void)store.setStatus(*id, RunState::Failed, -1);
        Error error = launched.error();
        error.message += " (run " + *id + " is recorded as failed)";
        return error;
    }
    if (auto r = store.setRunDir(*id, launched->runDir); !r)
        return r.error();
    if (auto r = store.setStatus(*id, RunState::Running, -1); !r)
        return r.error();
    wb::log::get("core")->info("started run {} on {} in {} (pid {})", *id, launched->target,
                               launched->runDir, launched->pid);
    return StartedRun{*id, std::move(*launched)};
}

}  // namespace wb::core
