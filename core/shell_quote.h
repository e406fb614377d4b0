// POSIX shell quoting, one place for every script and remote command the workbench writes: the
// generated launch scripts (core/planner), the commands sent over SSH and to Slurm (remote/).
// Pure; any thread.
#pragma once

#include <string>
#include <string_view>

namespace wb::core {

/// `word` as one word to sh, dash, bash or zsh whatever it holds (spaces, quotes, $(), backticks,
/// newlines, globs, a leading -): wrapped in single quotes, each embedded ' written as '\''.
/// An empty word becomes ''.
std::string shellQuote(std::string_view word);

/// The same word, left bare when it is made only of letters, digits and _-.,/:=+@% (and is not
/// empty): a generated script then reads as a person would write it. Otherwise shellQuote.
std::string shellWord(std::string_view word);

/// A path for a shell on another machine: a leading "~" or "~/" becomes "$HOME" (double-quoted,
/// so that shell expands it) and the rest is quoted; any other path is quoted whole.
std::string shellQuotePath(std::string_view path);

}  // namespace wb::core
