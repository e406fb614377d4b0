// The run directory claim (see the header). The scripts run under `sh -c` on the host.
#include "remote/run_dir_claim.h"

#include "core/run_target.h"
#include "remote/ssh_session.h"

namespace wb::remote {

std::string claimRunDirScript(const std::string& root, const std::string& runDir, const std::string& token)
{
    const std::string dir = shellQuote(runDir);
    const std::string tok = shellQuote(token);
    const std::string foreign = std::to_string(kExitForeignRunDir);
    // mkdir (not -p) for the run itself: an existing directory is ours only if it holds our token.
    // An empty one without a token is this launch's own mkdir whose token write never ran (the
    // script was killed between the two): rmdir only succeeds on an empty directory, so another
    // run's directory (never empty: run.json comes with it) is never taken.
    return "mkdir -p " + shellQuote(root) + " || exit 1\n"
           "if ! mkdir " + dir + " 2>/dev/null; then\n"
           "  [ -d " + dir + " ] || exit 1\n"
           "  t=$(cat " + shellQuote(runDir + "/.launch") + " 2>/dev/null)\n"
           "  if [ \"$t\" != " + tok + " ]; then\n"
           "    [ -z \"$t\" ] && rmdir " + dir + " 2>/dev/null && mkdir " + dir + " || exit " + foreign + "\n"
           "  fi\n"
           "fi\n"
           "if [ ! -s " + shellQuote(runDir + "/.launch") + " ]; then\n"
           "  printf '%s\\n' " + tok + " > " + shellQuote(runDir + "/.launch.tmp") + " && mv " +
           shellQuote(runDir + "/.launch.tmp") + " " + shellQuote(runDir + "/.launch") + " || exit 1\n"
           "fi\n";
}

std::string requireOwnRunDirScript(const std::string& runDir, const std::string& token)
{
    return "[ \"$(cat " + shellQuote(runDir + "/.launch") + " 2>/dev/null)\" = " + shellQuote(token) +
           " ] || exit " + std::to_string(kExitForeignRunDir) + "\n";
}

std::string launchTokenOr(const std::string& token) { return token.empty() ? core::newLaunchToken() : token; }

}  // namespace wb::remote
