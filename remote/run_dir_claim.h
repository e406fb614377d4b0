// Idempotent creation of a run directory on a remote host, keyed by the launch token
// (core::LaunchRequest::launchToken). Pure string building; any thread.
//
// A remote command that timed out, or whose connection dropped, may have run. Every
// state-changing step of a launch is therefore written so that running it twice with the same
// token has the effect of running it once, and a directory made by another launch (another token,
// or an older workbench's run without one) is still refused.
#pragma once

#include "remote/run_dir_protocol.h"

#include <string>

namespace wb::remote {

/// POSIX sh lines that make `runDir` (under `root`) this launch's directory: creates it and
/// writes `token` to runDir/.launch, or finds it already holding `token` (an earlier attempt of
/// this launch) and continues. Exits kExitForeignRunDir (run_dir_protocol.h) for another launch's directory, 1 on I/O
/// errors. Falls through (no exit) on success.
std::string claimRunDirScript(const std::string& root, const std::string& runDir, const std::string& token);

/// POSIX sh line that exits kExitForeignRunDir unless runDir/.launch holds `token`.
std::string requireOwnRunDirScript(const std::string& runDir, const std::string& token);

/// The token of a request, or a new one when it has none.
std::string launchTokenOr(const std::string& token);

}  // namespace wb::remote
