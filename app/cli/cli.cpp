// Global options, dispatch, and the helpers the commands share.
#include "app/cli/cli.h"

#include "core/log.h"
#include "core/paths.h"
#include "remote/ssh_hosts.h"
#include "remote/target_factory.h"

#include <fcntl.h>
#include <termios.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>

#include <spdlog/spdlog.h>

namespace wb::app {

namespace {

constexpr const char* kUsage =
    "usage: moe-workbench-cli [--db PATH] [--runs-root DIR] [--moe-train PATH] [-v] COMMAND ...\n"
    "       moe-workbench-cli --help | --version | COMMAND --help\n"
    "\n"
    "commands:\n"
    "  launch --target T --config FILE [--name NAME] [--steps N]  start a run; prints its id\n"
    "         (T: local, ssh:HOST, ssh:HOST1,HOST2 (one rank group per node), slurm:HOST;\n"
    "          hosts come from `hosts add`; --steps overrides train.train_iters for a quick try)\n"    "  launch --target slurm:HOST --bridge DIR [--detach]   submit a Megatron-Bridge job (generate --format\n"
    "                                                       megatron-bridge wrote DIR) and follow its output\n"
    "  watch RUN [--interval-ms N]                          follow a run until it ends\n"
    "  runs [--json] [--sync]                               list runs, newest first (live local runs caught\n"
    "                                                       up first; --sync: remote ones too)\n"
    "  runs rename RUN NAME | runs delete RUN [--files]     rename a run; delete it from the store\n"
    "                                                       (--files: its local run directory too)\n"
    "  show RUN [--json]                                    one run: summary, meta, last step, events\n"
    "  cancel RUN [--grace-s N]                             stop a run and its whole process group (a\n"
    "                                                       launched Bridge job: scancel)\n"
    "  hosts add|list|test|remove|slurm|script [NAME] [...] SSH hosts for --target ssh:HOST|slurm:HOST (docs/remote.md)\n"
    "  plan --model M --hardware H --gpus N [...] [--json]  recommendation + ranked layouts\n"
    "  lint FILE [--gpus N] [--hardware H] [--json]         config problems and layout rules, by line\n"
    "  generate --from PLAN_OR_CONFIG --format F --out DIR  runtime | megatron-bridge | slurm | ssh files\n"
    "  predict FILE --hardware H [--gpus N] [--for R] [--json]  memory, step terms, MFU of one given layout\n"
    "  compare RUN RUN... [--baseline RUN] [--window A:B] [--json] [--report DIR|FILE.html]\n"
    "                                                       steady-state figures, deltas, warnings\n"
    "  import --bridge LOG [--config YAML] [--model M] [--hardware H] [--gpus N] [--json]\n"
    "                                                       a finished Megatron-Bridge run into the store,\n"
    "                                                       with the planner's prediction for its layout\n"
    "  export RUN --csv FILE | export RUN RUN... --report DIR|FILE.html\n"
    "                                                       step metrics as CSV (FILE - = stdout), or a\n"
    "                                                       Markdown report with SVG charts\n"
    "\n"
    "RUN is a run id or a unique prefix of one. Exit codes: 0 ok, 2 bad usage or input, 1 other\n"
    "errors (watch: the run's own exit code when it did not finish). See docs/cli.md.\n";

// moe-train is installed beside the CLI (build/bin, /usr/bin): find it through our own binary.
std::string defaultMoeTrainPath()
{
    std::error_code ec;
    const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec)
        return "moe-train";
    return (self.parent_path() / "moe-train").string();
}

}  // namespace

core::Result<std::unique_ptr<core::RunStore>> CliContext::openStore() const
{
    return core::RunStore::open(dbPath);
}

core::Result<std::unique_ptr<core::RunTarget>> CliContext::target(const std::string& name) const
{
    remote::TargetContext context{moeTrainPath, runsRoot, remote::defaultHostsPath(dbPath)};
    context.askSecret = &CliContext::askOnTerminal;
    return remote::makeTarget(name, context);
}

std::optional<std::string> CliContext::askOnTerminal(const std::string& prompt, bool echo)
{
    // Only for a person at a terminal: a script or a test with stdin redirected never blocks here.
    if (!::isatty(STDIN_FILENO))
        return std::nullopt;
    const int fd = ::open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return std::nullopt;  // no terminal (a script, CI): no prompt, the auth fails with its message
    termios saved{};
    const bool isTerminal = ::tcgetattr(fd, &saved) == 0;
    if (isTerminal && !echo) {
        termios quiet = saved;
        quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
        ::tcsetattr(fd, TCSAFLUSH, &quiet);
    }
    (void)!::write(fd, prompt.data(), prompt.size());
    std::string answer;
    char c = 0;
    bool gotLine = false;
    while (::read(fd, &c, 1) == 1) {
        if (c == '\n') {
            gotLine = true;
            break;
        }
        answer.push_back(c);
    }
    if (isTerminal && !echo) {
        ::tcsetattr(fd, TCSAFLUSH, &saved);
        (void)!::write(fd, "\n", 1);
    }
    ::close(fd);
    if (!gotLine)
        return std::nullopt;  // end of input: treat as "no answer"
    return answer;
}

std::optional<std::string> Args::takeOption(const std::string& name, bool& missing)
{
    const std::string withEq = name + "=";
    for (size_t i = 0; i < m_args.size(); ++i) {
        if (m_args[i] == name) {
            if (i + 1 >= m_args.size()) {
                missing = true;
                m_args.erase(m_args.begin() + static_cast<std::ptrdiff_t>(i));
                return std::nullopt;
            }
            std::string value = m_args[i + 1];
            m_args.erase(m_args.begin() + static_cast<std::ptrdiff_t>(i),
                         m_args.begin() + static_cast<std::ptrdiff_t>(i + 2));
            return value;
        }
        if (m_args[i].rfind(withEq, 0) == 0) {
            std::string value = m_args[i].substr(withEq.size());
            m_args.erase(m_args.begin() + static_cast<std::ptrdiff_t>(i));
            return value;
        }
    }
    return std::nullopt;
}

bool Args::takeFlag(const std::string& name)
{
    for (size_t i = 0; i < m_args.size(); ++i) {
        if (m_args[i] == name) {
            m_args.erase(m_args.begin() + static_cast<std::ptrdiff_t>(i));
            return true;
        }
    }
    return false;
}

std::string Args::unknownOption() const
{
    for (const auto& arg : m_args)
        if (arg.size() > 1 && arg.front() == '-')
            return arg;
    return {};
}

int reportError(const core::Error& error)
{
    std::fprintf(stderr, "moe-workbench-cli: %s\n", error.toString().c_str());
    switch (error.code) {
    case core::ErrorCode::InvalidArgument:
    case core::ErrorCode::NotFound: return kExitUsage;
    default: return kExitFailure;
    }
}

int reportUsage(const std::string& problem, const char* synopsis)
{
    std::fprintf(stderr, "moe-workbench-cli: %s\nusage: moe-workbench-cli %s\n", problem.c_str(),
                 synopsis);
    return kExitUsage;
}

std::optional<int> rejectLeftovers(const Args& args, bool missing, const char* synopsis, bool allowPositional)
{
    // `COMMAND --help` (or -h) left over after the command took its options: its synopsis, exit 0.
    // (An option's value is taken first: `launch --name --help` names a run "--help".)
    if (const std::string left = args.unknownOption(); left == "--help" || left == "-h") {
        std::printf("usage: moe-workbench-cli %s\n", synopsis);
        return kExitOk;
    }
    if (missing)
        return reportUsage("an option is missing its value", synopsis);
    if (!args.unknownOption().empty())
        return reportUsage("unknown option '" + args.unknownOption() + "'", synopsis);
    if (!allowPositional && !args.rest().empty())
        return reportUsage("unexpected argument '" + args.rest().front() + "'", synopsis);
    return std::nullopt;
}

int runCli(int argc, char** argv)
{
    Args args(std::vector<std::string>(argv + 1, argv + argc));
    // The global help is -h/--help before the command; after it the command reads its own
    // arguments (issue 20 item 12: `launch --name --help` was taken as the help flag).
    bool globalHelp = false;
    for (size_t i = 0; i < args.rest().size(); ++i) {
        const std::string& a = args.rest()[i];
        if (a == "-h" || a == "--help") {
            globalHelp = true;
            break;
        }
        if (a == "--version") {
            std::printf("moe-workbench-cli %s\n", WB_VERSION);
            return kExitOk;
        }
        if (a == "--db" || a == "--runs-root" || a == "--moe-train")
            ++i;  // its value
        else if (a.empty() || a.front() != '-')
            break;  // the command
    }
    if ((globalHelp && (args.takeFlag("-h") || args.takeFlag("--help"))) || args.rest().empty()) {
        std::fputs(kUsage, args.rest().empty() ? stderr : stdout);
        return args.rest().empty() ? kExitUsage : kExitOk;
    }
    if (args.takeFlag("-v") || args.takeFlag("--verbose"))
        spdlog::set_level(spdlog::level::debug);

    CliContext context;
    bool missing = false;
    context.dbPath = args.takeOption("--db", missing).value_or(core::defaultStorePath());
    context.runsRoot = args.takeOption("--runs-root", missing).value_or(core::defaultRunsRoot());
    context.moeTrainPath = args.takeOption("--moe-train", missing).value_or(defaultMoeTrainPath());
    if (missing) {
        std::fputs("moe-workbench-cli: --db, --runs-root and --moe-train each need a value\n", stderr);
        std::fputs(kUsage, stderr);
        return kExitUsage;
    }
    wb::log::get("cli")->debug("store {}, runs root {}, moe-train {}", context.dbPath,
                               context.runsRoot, context.moeTrainPath);

    std::vector<std::string> rest = args.rest();
    const std::string command = rest.front();
    rest.erase(rest.begin());
    using Command = std::function<int(const CliContext&, Args)>;
    static const std::map<std::string, Command> kCommands = {
        {"launch", launchCommand}, {"watch", watchCommand},   {"runs", runsCommand},
        {"show", showCommand},     {"cancel", cancelCommand},
        {"hosts", hostsCommand},
        {"plan", planCommand}, {"lint", lintCommand}, {"generate", generateCommand}, {"predict", predictCommand},
        {"compare", compareCommand}, {"export", exportCommand}, {"import", importCommand},
    };
    const auto it = kCommands.find(command);
    if (it == kCommands.end()) {
        std::fprintf(stderr, "moe-workbench-cli: unknown command '%s'\n", command.c_str());
        std::fputs(kUsage, stderr);
        return kExitUsage;
    }
    return it->second(context, Args(std::move(rest)));
}

}  // namespace wb::app
